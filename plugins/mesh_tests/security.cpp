// SPDX-License-Identifier: MIT
// Mesh test module, part 3: what a worker accepts and refuses (tokens, duplicate node ids, frame
// limits, hostile connections, startup timeouts). Checked by
// tests/integration/mesh_security_test.cpp.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "mesh_tests.hpp"

using namespace mesh_tests;

// A worker others attach to: prints "LISTEN <address>", then "PEER joined:<node>@<attempt>" and
// "PEER left:<node>@<attempt>:<reason>:lost=<n>" for each peer, until SIGUSR1 (sent to its
// launcher) ends it.
DITASK_MAIN(serve) {
  auto& task = ditask::task();
  Shared<bool> usr1;
  auto running = task.start();
  task.on(ditask::events::peer_joined,
          [](const ditask::Kwargs& kw) { say("PEER", membership_text(kw, false)); });
  task.on(ditask::events::peer_left,
          [](const ditask::Kwargs& kw) { say("PEER", membership_text(kw, true)); });
  task.on("SIGUSR1", [&usr1]() { usr1.update([](auto& b) { b = true; }); });
  say("LISTEN", listen_address());
  usr1.wait([](auto b) { return b; }, "SIGUSR1", 120s);
  result("peers=" + peers_text());
}

// Starts the task (which waits for the mesh to be ready) and reports the peers it connected to.
DITASK_MAIN(join) {
  auto& task = ditask::task();
  auto running = task.start();
  result("joined peers=" + peers_text());
}

// Frame limit (2 workers, --max-frame-bytes 64K): node 1 emits a size=102400-byte event to node 0,
// which must fail locally with ditask::Error ("OVERSIZE_ERROR <what>"), then a small event, which
// must still arrive over the same connection.
DITASK_MAIN(oversize) {
  auto& task = ditask::task();
  const auto size = static_cast<std::size_t>(Params().integer("size", 102400));
  struct State {
    std::int64_t big = 0;
    std::int64_t small = 0;
    bool ack = false;
  };
  Shared<State> state;
  auto running = task.start();
  if (node_id() == 0) {
    task.on("big", [&state](const ditask::EventArgs&) { state.update([](auto& s) { ++s.big; }); });
    task.on("small", [&state](std::int64_t) { state.update([](auto& s) { ++s.small; }); });
    state.wait([](const auto& s) { return s.small >= 1; }, "the small event");
    task.sync();
    task.emit_to_node(1, "small_ack");
    result("big=" + std::to_string(state.get().big) +
           " small=" + std::to_string(state.get().small));
    return;
  }
  task.on("small_ack", [&state]() { state.update([](auto& s) { s.ack = true; }); });
  std::string outcome = "none";
  try {
    task.emit_to_node(0, "big", std::vector<std::uint8_t>(size, 0x5a));
  } catch (const ditask::Error& e) {
    outcome = "ditask_error";
    say("OVERSIZE_ERROR", e.what());
  } catch (const std::exception& e) {
    outcome = "other_error";
    say("OVERSIZE_ERROR", e.what());
  }
  task.emit_to_node(0, "small", std::int64_t{1});
  state.wait([](const auto& s) { return s.ack; }, "node 0's small_ack");
  result("outcome=" + outcome + " peers=" + peers_text());
}
