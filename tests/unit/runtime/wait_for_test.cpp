// SPDX-License-Identifier: MIT
// wait_for / wait_for_or_throw / Waiter. Ports DI-engine's test_wait_for and test_async_exception
// (test_task.py) and pins the fixed wait_for leak of reference/diengine.md §3.3.
// Catch2 assertions run on the test thread only; other threads record what they saw.
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "internal_access.hpp"
#include <ditask/ditask.hpp>

using namespace std::chrono_literals;

namespace {

/// Polls `pred` (yielding, never sleeping) until it holds or `limit` passes; returns pred().
template <class Pred>
bool spin_until(Pred pred, std::chrono::milliseconds limit = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return pred();
    }
    std::this_thread::yield();
  }
  return true;
}

/// A thread that emits `event` with `value` as soon as someone waits for it (handler_count > 0).
std::jthread emit_when_waited(std::string event, int value) {
  return std::jthread([event = std::move(event), value] {
    auto& task = ditask::task();
    if (spin_until([&] { return ditask::detail::TaskAccess::handler_count(task, event) > 0; })) {
      task.emit(event, value);
    }
  });
}

/// Stops the task when destroyed; declared after a helper thread, it ends that thread's waits
/// before the thread is joined, so a failed REQUIRE cannot hang the test.
struct StopTaskFirst {
  StopTaskFirst() = default;
  StopTaskFirst(const StopTaskFirst&) = delete;
  StopTaskFirst& operator=(const StopTaskFirst&) = delete;
  ~StopTaskFirst() { ditask::task().stop(); }
};

}  // namespace

TEST_CASE("wait_for returns the arguments of the next emit", "[task][wait_for]") {
  auto& task = ditask::task();
  auto running = task.start();
  auto emitter = emit_when_waited("answer", 42);
  auto got = task.wait_for("answer", 10s);
  REQUIRE(got.has_value());
  CHECK(got->get<int>(0) == 42);
  CHECK(got->size() == 1);
  CHECK(ditask::detail::TaskAccess::handler_count(task, "answer") == 0);
}

TEST_CASE("wait_for times out with nullopt and leaves no handler behind", "[task][wait_for][defects]") {
  auto& task = ditask::task();
  auto running = task.start();
  CHECK_FALSE(task.wait_for("never", 50ms).has_value());
  CHECK(ditask::detail::TaskAccess::handler_count(task, "never") == 0);
  CHECK_FALSE(task.wait_for("never", 0ms).has_value());
  CHECK(ditask::detail::TaskAccess::handler_count(task, "never") == 0);
}

TEST_CASE("k wait_for calls leave nothing behind: one later emit reaches a handler exactly once",
          "[task][wait_for][defects]") {
  auto& task = ditask::task();
  auto running = task.start();
  constexpr int k = 5;
  for (int i = 0; i < k; ++i) {
    auto emitter = emit_when_waited("y", i);
    auto got = task.wait_for("y", 10s);
    REQUIRE(got.has_value());
    CHECK(got->get<int>(0) == i);
    CHECK(ditask::detail::TaskAccess::handler_count(task, "y") == 0);
  }
  // One event satisfies one wait_for only: the last emit is already consumed.
  CHECK_FALSE(task.wait_for("y", 50ms).has_value());

  int calls = 0;
  task.on("y", [&calls](int) { ++calls; });
  CHECK(ditask::detail::TaskAccess::handler_count(task, "y") == 1);
  task.emit("y", 100);
  task.sync();
  CHECK(calls == 1);
}

TEST_CASE("wait_for_or_throw throws TimeoutError naming the event on timeout", "[task][wait_for]") {
  auto& task = ditask::task();
  auto running = task.start();
  CHECK_THROWS_AS(task.wait_for_or_throw("never", 50ms), ditask::TimeoutError);
  CHECK_THROWS_WITH(task.wait_for_or_throw("never", 50ms), Catch::Contains("never"));
  CHECK(ditask::detail::TaskAccess::handler_count(task, "never") == 0);

  auto emitter = emit_when_waited("soon", 7);
  CHECK(task.wait_for_or_throw("soon", 10s).get<int>(0) == 7);
}

TEST_CASE("a Waiter created before an emit catches it", "[task][wait_for][waiter]") {
  auto& task = ditask::task();
  auto running = task.start();
  {
    auto waiter = task.waiter("hello");
    CHECK(waiter.event() == "hello");
    CHECK(ditask::detail::TaskAccess::handler_count(task, "hello") == 1);
    task.emit("hello", std::string("world"), ditask::kw("n", 3));
    task.sync();  // the event has certainly been dispatched before wait() starts

    auto got = waiter.wait(10s);
    REQUIRE(got.has_value());
    CHECK(got->get<std::string>(0) == "world");
    CHECK(got->named().get<int>("n") == 3);
  }
  CHECK(ditask::detail::TaskAccess::handler_count(task, "hello") == 0);  // destroying the waiter unsubscribes

  // A waiter that never got its event also leaves nothing behind.
  {
    auto unused = task.waiter("unheard");
    CHECK(ditask::detail::TaskAccess::handler_count(task, "unheard") == 1);
  }
  CHECK(ditask::detail::TaskAccess::handler_count(task, "unheard") == 0);

  // Emitted from another thread while the test thread waits.
  auto waiter = task.waiter("cross");
  std::jthread emitter([&task] { task.emit("cross", 9); });
  auto got = waiter.wait(10s);
  REQUIRE(got.has_value());
  CHECK(got->get<int>(0) == 9);
}

TEST_CASE("wait_for and Waiter::wait inside a handler throw ditask::Error, reported as HandlerError",
          "[task][wait_for][errors]") {
  auto& task = ditask::task();
  auto running = task.start();
  const bool use_waiter = GENERATE(false, true);
  task.on("inner", [&task, use_waiter](const ditask::EventArgs&) {
    if (use_waiter) {
      auto waiter = task.waiter("nested");
      (void)waiter.wait(10ms);
    } else {
      (void)task.wait_for("nested", 10ms);
    }
  });
  task.emit("inner");
  std::optional<ditask::HandlerError> err;
  try {
    task.sync();
  } catch (const ditask::HandlerError& e) {
    err = e;
  }
  REQUIRE(err.has_value());
  CHECK(err->event() == "inner");
  CHECK_THROWS_AS(std::rethrow_exception(err->cause()), ditask::Error);
  CHECK(ditask::detail::TaskAccess::handler_count(task, "nested") == 0);
  CHECK_NOTHROW(task.sync());
}

TEST_CASE("stop wakes a pending wait_for, which returns nullopt", "[task][wait_for][lifecycle]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::atomic<int> result{-1};  // -1 still waiting, 0 nullopt, 1 got args
  std::jthread waiter_thread([&task, &result] {
    auto got = task.wait_for("never");  // no timeout: only stop can end it
    result = got.has_value() ? 1 : 0;
  });
  StopTaskFirst stop_before_join;
  REQUIRE(spin_until([&task] { return ditask::detail::TaskAccess::handler_count(task, "never") == 1; }));
  auto pending = task.waiter("also_never");
  running.stop();
  waiter_thread.join();
  CHECK(result.load() == 0);
  CHECK_FALSE(pending.wait(10s).has_value());  // a waiter outliving its task returns at once
}

// DI-engine test_wait_for: step1 waits for "Greeting", step2 emits it, concurrently (async mode).
TEST_CASE("async step1 waits for the Greeting that step2 emits, ten steps in a row", "[task][wait_for][async]") {
  auto& task = ditask::task();
  ditask::StartOptions options;
  options.async_mode = true;
  options.n_async_workers = 2;
  auto running = task.start(options);

  std::vector<std::string> greets;  // written by step1 only; steps are separated by sync
  std::counting_semaphore<> step1_listening{0};
  task.use([&task, &greets, &step1_listening](ditask::Context&) {
    auto waiter = task.waiter("Greeting");
    step1_listening.release();
    auto got = waiter.wait(10s);
    greets.push_back(got ? got->get<std::string>(0) : std::string("<timeout>"));
  });
  task.use([&task, &step1_listening](ditask::Context&) {
    if (!step1_listening.try_acquire_for(10s)) {
      throw std::runtime_error("step1 never started listening");
    }
    task.emit("Greeting", std::string("Hi"));
  });
  task.run(10);

  CHECK(greets == std::vector<std::string>(10, "Hi"));
  CHECK(ditask::detail::TaskAccess::handler_count(task, "Greeting") == 0);
}

TEST_CASE("TimeoutError from wait_for_or_throw in a middleware propagates out of run", "[task][wait_for][async]") {
  auto& task = ditask::task();
  ditask::StartOptions options;
  options.async_mode = true;
  options.n_async_workers = 2;
  auto running = task.start(options);
  task.use([&task](ditask::Context&) { (void)task.wait_for_or_throw("Greeting", 50ms); });
  CHECK_THROWS_AS(task.run(1), ditask::TimeoutError);
  CHECK(ditask::detail::TaskAccess::handler_count(task, "Greeting") == 0);
}

// DI-engine test_async_exception: a failing forward aborts the other forward's wait_for.
TEST_CASE("a middleware exception in async mode wakes a pending wait_for and propagates from run",
          "[task][wait_for][async][errors]") {
  auto& task = ditask::task();
  ditask::StartOptions options;
  options.async_mode = true;
  auto running = task.start(options);
  std::atomic<int> step1_result{-1};  // -1 not returned, 0 nullopt, 1 got args
  task.use([&task, &step1_result](ditask::Context&) {
    auto got = task.wait_for("forever");  // no timeout: only the failure ends it
    step1_result = got.has_value() ? 1 : 0;
  });
  task.use([&task](ditask::Context&) {
    // Fail only once step1 is really waiting, so the test exercises the wake-up.
    spin_until([&task] { return ditask::detail::TaskAccess::handler_count(task, "forever") > 0; });
    throw std::runtime_error("step2 failed");
  });

  std::string message;
  try {
    task.run(2);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK(message == "step2 failed");
  CHECK(task.ctx().total_step == 0);
  CHECK(step1_result.load() == 0);
  CHECK(ditask::detail::TaskAccess::handler_count(task, "forever") == 0);
}

TEST_CASE("Waiter::wait surfaces a handler failure, once, pending before or during the wait",
          "[task][wait_for][errors]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::atomic<bool> hold{false};  // boom's handler waits while it is set
  task.on("boom", [&hold](int) {
    spin_until([&hold] { return !hold.load(); });
    throw std::runtime_error("handler failed");
  });
  SECTION("the failure happens while it waits: the wait is woken for it") {
    auto w = task.waiter("never");
    task.emit_local("boom", 1);
    CHECK_THROWS_AS(w.wait(30s), ditask::HandlerError);
  }
  SECTION("the failure is pending before the wait") {
    std::atomic<bool> after{false};
    task.on("after", [&after] { after = true; });
    hold = true;  // boom fails only once "after" is emitted too: that emit must not see the failure
    task.emit_local("boom", 1);
    task.emit_local("after");
    hold = false;
    REQUIRE(spin_until([&] { return after.load(); }));  // FIFO: boom has failed by now
    auto w = task.waiter("never");
    CHECK_THROWS_AS(w.wait(30s), ditask::HandlerError);
  }
  // Reported once: the next wait just times out.
  auto w = task.waiter("never");
  CHECK(w.wait(10ms) == std::nullopt);
}
