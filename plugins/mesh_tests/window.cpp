// SPDX-License-Identifier: MIT
// The startup window across processes (2 workers): node 1 emits count=N "ping"(i) and then "end"
// right after its start; node 0 registers two handlers for "ping" gap_ms apart (after waiting for
// "end" first when wait_first=1, which must not end the window) and reports what each one saw.
// Also the roles entry: --roles reaching the workers (has_role, role.<name> labels, emit_to_role).
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
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
  const auto count = params.integer("count", 3);
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
  if (params.integer("wait_first", 0) == 1 && !end.wait(60s)) {
    throw std::runtime_error("no 'end' from node 1");
  }
  Shared<Seen> seen;
  task.on("ping", [&seen](std::int64_t i) { seen.update([&](Seen& s) { s.a.push_back(i); }); });
  // The gap between the registrations is the scenario (the dispatcher may run in between).
  std::this_thread::sleep_for(std::chrono::milliseconds(params.integer("gap_ms", 0)));
  task.on("ping", [&seen](std::int64_t i) { seen.update([&](Seen& s) { s.b.push_back(i); }); });
  if (params.integer("wait_first", 0) == 0 && !end.wait(60s)) {
    throw std::runtime_error("no 'end' from node 1");
  }
  task.sync();  // "end" came after every ping: their handlers have run too
  task.ready();
  const auto s = seen.get();
  result("a=" + joined(s.a) + " b=" + joined(s.b));
}

// Roles (--roles learner:0,...,collector:N-): every node reports its roles; each collector tells
// the learner with emit_to_role, the learner answers the collectors with emit_to_role.
DITASK_MAIN(roles) {
  auto& task = ditask::task();
  // Before `running`: its handler may still be returning from update() when the wait ends, so it
  // must outlive the task's dispatcher (found by ThreadSanitizer).
  Shared<std::set<std::int64_t>> heard;
  auto running = task.start();
  std::string labels;
  for (const auto& label : task.labels()) {
    if (label.rfind("role.", 0) == 0) {
      labels += (labels.empty() ? "" : ",") + label;
    }
  }
  const std::string me = "roles=" + joined(task.roles()) + " learner=" + (task.has_role("learner") ? "1" : "0") +
                         " labels=" + labels;
  if (task.has_role("learner")) {
    std::size_t collectors = 0;
    for (const auto& peer : task.router().peers()) {
      collectors += peer.labels.count("role.collector");
    }
    task.on("hello", [&heard](std::int64_t from) { heard.update([&](auto& s) { s.insert(from); }); });
    task.ready();
    heard.wait([&](const auto& s) { return s.size() == collectors; }, "a hello from every collector");
    task.emit_to_role("collector", "done");
    result(me + " heard=" + joined(heard.get()));
    return;
  }
  auto done = task.waiter("done");
  if (task.has_role("collector")) {
    task.emit_to_role("learner", "hello", node_id());
    if (!done.wait(60s)) {
      throw std::runtime_error("no 'done' from the learner");
    }
  }
  result(me);
}
