// SPDX-License-Identifier: MIT
// Mesh test module, part 6: a transport's outage (Redis restarted mid-run). Checked by
// tests/integration/redis_test.cpp.
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <unistd.h>

#include "mesh_tests.hpp"

using namespace mesh_tests;

namespace {

struct OutageState {
  std::int64_t received = 0;
  std::int64_t next = 0;         // the next value expected from node 1
  std::int64_t inversions = 0;   // values below it (reordered or repeated)
  std::int64_t sent = -1;        // what node 1 says it sent, once its "last" came
  std::int64_t usr1 = 0;
};

}  // namespace

// Two workers. Node 1 emits "tick"(0, 1, 2, ...) to node 0, a hundred every millisecond, until
// SIGUSR1 (the test restarts Redis in between), then "last"(the number sent). Node 0 prints
// "RECEIVING pid=<pid>" after 1000 ticks and, at "last": "RESULT received=R inversions=I
// lost=L accounted=<R + L == sent> sent=S" with L its transport's lost count.
DITASK_MAIN(outage) {
  auto& task = ditask::task();
  Shared<OutageState> state;
  auto running = task.start();
  if (node_id() == 0) {
    task.on("tick", [&state](std::int64_t value) {
      bool armed = false;
      state.update([&](OutageState& s) {
        ++s.received;
        if (value < s.next) {
          ++s.inversions;
        } else {
          s.next = value + 1;
        }
        armed = s.received == 1000;
      });
      if (armed) {
        say("RECEIVING", "pid=" + std::to_string(::getpid()));
      }
    });
    task.on("last", [&state](std::int64_t sent) { state.update([&](OutageState& s) { s.sent = sent; }); });
    task.ready();
    state.wait([](const OutageState& s) { return s.sent >= 0; }, "node 1's last", std::chrono::minutes(3));
    const auto s = state.get();
    const auto lost = static_cast<std::int64_t>(task.router().stats().lost);
    result("received=" + std::to_string(s.received) + " inversions=" + std::to_string(s.inversions) +
           " lost=" + std::to_string(lost) + " accounted=" + (s.received + lost == s.sent ? "yes" : "no") +
           " sent=" + std::to_string(s.sent));
    return;
  }
  task.on("SIGUSR1", [&state]() { state.update([](OutageState& s) { ++s.usr1; }); });
  task.ready();
  say("SENDING", "pid=" + std::to_string(::getpid()));
  std::int64_t sent = 0;
  while (state.get().usr1 == 0) {
    for (int i = 0; i < 100; ++i) {
      task.emit_to_node(0, "tick", sent++);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  task.emit_to_node(0, "last", sent);
  result("sent=" + std::to_string(sent));
}

// Two workers; a reader that stops (the test SIGSTOPs node 0 once both printed their pid): node 1
// waits for SIGUSR1, then emits count=N blobs of size=S bytes to node 0 as fast as it can. Over
// Redis the sender may have only a window of bytes on their way that node 0 has not read, so a
// stopped reader holds the sender back instead of Redis closing the reader's subscription.
// Node 0: "RESULT received=R bytes=B corrupt=C lost=L"; node 1: "RESULT sent=N".
DITASK_MAIN(stalled_reader) {
  auto& task = ditask::task();
  const Params params;
  const auto count = params.integer("count", 48);
  const auto size = static_cast<std::size_t>(params.integer("size", 1 << 20));
  Shared<BlobTally> state;
  Shared<bool> go;
  auto running = task.start();
  if (node_id() == 1) {
    task.on("SIGUSR1", [&go]() { go.update([](bool& g) { g = true; }); });
    task.ready();
    say("WAITING", "pid=" + std::to_string(::getpid()));
    go.wait([](bool g) { return g; }, "SIGUSR1", std::chrono::minutes(3));
    for (std::int64_t i = 0; i < count; ++i) {
      task.emit_to_node(0, "blob", i, pattern_bytes(i, size));
    }
    result("sent=" + std::to_string(count));
    return;
  }
  task.on("blob", [&state, size](std::int64_t i, std::vector<std::uint8_t> blob) {
    const bool ok = is_pattern(blob, i, size);
    state.update([&](BlobTally& s) { s.add(i, blob.size(), ok); });
  });
  task.ready();
  say("READING", "pid=" + std::to_string(::getpid()));
  state.wait([count](const BlobTally& s) { return s.received >= count; }, "every blob", std::chrono::minutes(3));
  const auto s = state.get();
  result("received=" + std::to_string(s.received) + " bytes=" + std::to_string(s.bytes) +
         " corrupt=" + std::to_string(s.corrupt) + " lost=" + std::to_string(task.router().stats().lost));
}
