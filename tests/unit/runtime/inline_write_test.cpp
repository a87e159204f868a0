// SPDX-License-Identifier: MIT
// Who may write an emit itself (transport/inline_write.hpp): one grant, taken once; the bus
// grants before each handler, a wait when it returns, and other threads keep their own.
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "transport/inline_write.hpp"
#include <ditask/ditask.hpp>

using namespace std::chrono_literals;
using ditask::detail::grant_inline_write;
using ditask::detail::take_inline_write;

TEST_CASE("inline write: a grant is taken once, and belongs to the thread that got it", "[inline_write]") {
  while (take_inline_write()) {
  }
  CHECK_FALSE(take_inline_write());
  grant_inline_write();
  bool other = true;
  std::thread([&] { other = take_inline_write(); }).join();
  CHECK_FALSE(other);
  CHECK(take_inline_write());
  CHECK_FALSE(take_inline_write());
}

TEST_CASE("inline write: each handler starts with a grant, so its first emit only is written by it",
          "[inline_write]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<std::pair<bool, bool>> seen;  // per handler call: first take, second take
  auto probe = [&](int) {
    const bool first = take_inline_write();
    const bool second = take_inline_write();
    seen.emplace_back(first, second);
  };
  task.on("probe", probe);
  task.on("probe", probe);
  task.emit("probe", 1);
  task.emit("probe", 2);
  task.stop();
  REQUIRE(seen.size() == 4);
  for (const auto& [first, second] : seen) {
    CHECK(first);
    CHECK_FALSE(second);
  }
}

TEST_CASE("inline write: a wait grants the waiting thread one when it returns, event or timeout",
          "[inline_write]") {
  auto& task = ditask::task();
  auto running = task.start();
  while (take_inline_write()) {
  }
  CHECK_FALSE(task.wait_for("never", 1ms).has_value());
  CHECK(take_inline_write());
  auto waiter = task.waiter("late");
  std::jthread emitter([&task] { task.emit("late", 7); });
  CHECK(waiter.wait(20s).has_value());
  CHECK(take_inline_write());
  CHECK_FALSE(take_inline_write());
  task.stop();
}
