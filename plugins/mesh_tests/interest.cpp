// SPDX-License-Identifier: MIT
// Mesh test module, part 7: which events travel to a peer that handles only some (over Redis a
// peer is sent only what it handles, once its startup window closed). Checked by
// tests/integration/redis_test.cpp.
#include <cstdint>
#include <string>

#include "mesh_tests.hpp"

using namespace mesh_tests;

namespace {

struct InterestState {
  std::int64_t wanted = 0;
  std::int64_t late = 0;
  std::int64_t marks = 0;  // node 1: "mark" events seen; node 0: "armed" events seen
};

std::string stats_line() {
  const auto s = ditask::task().router().stats();
  return "received=" + std::to_string(s.received) + " unhandled=" + std::to_string(s.unhandled);
}

}  // namespace

// Two workers. Node 1 handles "wanted" (and, for a while, "late"); node 0 sends it, in three
// rounds each closed by a "mark": 50 "unwanted" + 50 "wanted"; after node 1 registered "late",
// 10 "late"; after node 1 removed it (off), 10 "late" again. Node 1 says "armed" before each
// round. RESULT lines: node 1 "wanted=50 late=10 <stats>", node 0 "<stats>" (received counts
// event frames, unhandled those no handler took, here or, over Redis, not sent for that reason;
// node 1 prints once node 0 did: it says "armed" a fourth time once it counted, and node 0
// answers with a fourth mark).
DITASK_MAIN(interest) {
  auto& task = ditask::task();
  Shared<InterestState> state;
  auto running = task.start();
  if (node_id() == 1) {
    task.on("wanted", [&state] { state.update([](InterestState& s) { ++s.wanted; }); });
    task.on("mark", [&state] { state.update([](InterestState& s) { ++s.marks; }); });
    task.ready();
    task.emit_to_node(0, "armed");
    state.wait([](const InterestState& s) { return s.marks == 1; }, "mark 1");
    const auto late = task.on("late", [&state] { state.update([](InterestState& s) { ++s.late; }); });
    task.emit_to_node(0, "armed");  // after on(): node 0's "late" events come after it, causally
    state.wait([](const InterestState& s) { return s.marks == 2; }, "mark 2");
    task.off("late", late);
    task.emit_to_node(0, "armed");
    state.wait([](const InterestState& s) { return s.marks == 3; }, "mark 3");
    const auto s = state.get();
    const auto line = "wanted=" + std::to_string(s.wanted) + " late=" + std::to_string(s.late) + " " + stats_line();
    // Node 0 counted before this; its fourth mark comes only after this "armed", so mark 3 is
    // never overtaken (a wait for marks == 3 would miss it) and nothing more is counted above.
    task.emit_to_node(0, "armed");
    state.wait([](const InterestState& st) { return st.marks == 4; }, "node 0's report");
    result(line);
    return;
  }
  task.on("armed", [&state] { state.update([](InterestState& s) { ++s.marks; }); });
  task.ready();
  state.wait([](const InterestState& s) { return s.marks == 1; }, "node 1 armed (1)");
  for (int i = 0; i < 50; ++i) {
    task.emit_to_node(1, "unwanted");
    task.emit_to_node(1, "wanted");
  }
  task.emit_to_node(1, "mark");
  state.wait([](const InterestState& s) { return s.marks == 2; }, "node 1 armed (2)");
  for (int i = 0; i < 10; ++i) {
    task.emit_to_node(1, "late");
  }
  task.emit_to_node(1, "mark");
  state.wait([](const InterestState& s) { return s.marks == 3; }, "node 1 armed (3)");
  for (int i = 0; i < 10; ++i) {
    task.emit_to_node(1, "late");
  }
  drain();
  const auto line = stats_line();  // before node 1 can send its fourth "armed"
  task.emit_to_node(1, "mark");
  result(line);
  state.wait([](const InterestState& s) { return s.marks == 4; }, "node 1's count (armed 4)");
  task.emit_to_node(1, "mark");  // reported
}
