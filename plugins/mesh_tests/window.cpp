// SPDX-License-Identifier: MIT
// The startup window across processes (2 workers): node 1 emits count=N "ping"(i) and then "end"
// right after its start; node 0 registers two handlers for "ping" gap_ms apart (after waiting for
// "end" first when wait_first=1, which must not end the window) and reports what each one saw.
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "mesh_tests.hpp"

namespace mesh_tests {
namespace {

struct Seen {
  std::vector<std::int64_t> a;
  std::vector<std::int64_t> b;
};

}  // namespace
}  // namespace mesh_tests

using namespace mesh_tests;

DITASK_MAIN(early_handlers) {
  auto& task = ditask::task();
  const Params params;
  const auto count = params.num("count", 3);
  auto running = task.start();
  if (node_id() == 1) {
    for (std::int64_t i = 0; i < count; ++i) {
      task.emit_remote("ping", i);
    }
    task.emit_remote("end");
    result("sent=" + std::to_string(count + 1));
    return;
  }
  auto end = task.waiter("end");
  if (params.num("wait_first", 0) == 1 && !end.wait(60s)) {
    throw std::runtime_error("no 'end' from node 1");
  }
  Shared<Seen> seen;
  task.on("ping", [&seen](std::int64_t i) { seen.update([&](Seen& s) { s.a.push_back(i); }); });
  // The gap between the registrations is the scenario (the dispatcher may run in between).
  std::this_thread::sleep_for(std::chrono::milliseconds(params.num("gap_ms", 0)));
  task.on("ping", [&seen](std::int64_t i) { seen.update([&](Seen& s) { s.b.push_back(i); }); });
  if (params.num("wait_first", 0) == 0 && !end.wait(60s)) {
    throw std::runtime_error("no 'end' from node 1");
  }
  task.sync();  // "end" came after every ping: their handlers have run too
  task.ready();
  const auto s = seen.get();
  result("a=" + joined(s.a) + " b=" + joined(s.b));
}
