// SPDX-License-Identifier: MIT
// A program linked against the installed ditask::runtime. It exercises events, waits,
// middleware and error reporting, and prints "package_user: ok" when everything matched.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <ditask/ditask.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "package_user: check failed: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  using namespace std::chrono_literals;
  auto& task = ditask::task();
  auto running = task.start({.labels = {"package"}});
  check(task.running(), "task().running() after start()");
  check(task.match_labels("package"), "labels from StartOptions");

  // Typed handler with a named argument; emit only queues, sync waits for the handler.
  int sum = 0;
  std::string who;
  task.on("add", [&](int a, int b, const ditask::Kwargs& named) {
    sum = a + b;
    who = named.get<std::string>("who");
  });
  task.emit("add", 2, 3, ditask::kw("who", std::string("package")));
  task.sync();
  check(sum == 5 && who == "package", "on/emit/sync with a keyword argument");

  // A handler that emits in turn; the waiter is subscribed before the first emit.
  task.on("ping", [&task](std::vector<std::uint8_t> bytes) {
    task.emit("pong", static_cast<int>(bytes.size()));
  });
  auto waiter = task.waiter("pong");
  task.emit("ping", std::vector<std::uint8_t>{1, 2, 3});
  auto pong = waiter.wait(10s);
  check(pong && pong->get<int>(0) == 3, "waiter() sees an event emitted by a handler");
  check(!task.wait_for("never", 10ms).has_value(), "wait_for times out with nullopt");

  // A throwing handler surfaces once, as HandlerError, on this thread (the exception type must
  // match across the shared library boundary).
  task.on("boom", [](int) { throw std::runtime_error("boom"); });
  task.emit("boom", 1);
  bool caught = false;
  try {
    task.sync();
  } catch (const ditask::HandlerError& e) {
    caught = e.event() == "boom";
  }
  check(caught, "HandlerError from sync() after a throwing handler");
  task.sync();

  // Middleware with a backward part, three steps.
  std::vector<std::string> trace;
  task.use([&trace](ditask::Context& ctx) -> ditask::Backward {
    // Not `"f" + std::to_string(...)`: GCC 12 gives a false -Wrestrict there at -O2 (PR 105329).
    trace.push_back(std::to_string(ctx.total_step).insert(0, 1, 'f'));
    return [&trace] { trace.push_back("b"); };
  });
  task.run(3);
  check(trace == std::vector<std::string>{"f0", "b", "f1", "b", "f2", "b"}, "run(3) order");

  running.stop();
  check(!task.running(), "Running::stop() stops the task");
  std::printf("package_user: %s (runtime %s)\n", failures == 0 ? "ok" : "FAILED",
              ditask::runtime_version());
  return failures == 0 ? 0 : 1;
}
