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
