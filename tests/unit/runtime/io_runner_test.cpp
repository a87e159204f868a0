// SPDX-License-Identifier: MIT
// IoRunner: a mesh's io_context is run by its io thread, or by a thread that waits for an answer
// once the io thread let it go; the io thread takes it back when no waiter runs it, and ends at
// a stop even while a waiter runs it.
#include "mesh/io_runner.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

using ditask::detail::WakeWord;
using ditask::detail::mesh::IoRunner;

namespace {

/// One io_context with its io thread, as the mesh runs them.
struct Rig {
  explicit Rig(std::chrono::microseconds idle)
      : runner(
            io, [this](const std::exception&) { ++errors; }, idle),
        thread([this] { runner.io_thread_loop(); }) {}
  ~Rig() { stop(); }
  void stop() {
    if (thread.joinable()) {
      work.reset();
      io.stop();
      runner.stopped();
      thread.join();
    }
  }

  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work{
      io.get_executor()};
  std::atomic<int> errors{0};
  IoRunner runner;
  std::thread thread;
};

/// One awaited answer: a handler posted to the io_context completes it, on whichever thread
/// runs it, and records that thread.
struct Answer {
  std::atomic<bool> done{false};
  WakeWord word;
  std::atomic<bool> would_run{false};
  std::thread::id ran_on;

  // Posts the handler; `offer`: it lets the io_context go afterwards, as the RPC engine does
  // when it woke a waiter that would run it.
  void post(Rig& rig, bool offer) {
    boost::asio::post(rig.io, [this, &rig, offer] {
      ran_on = std::this_thread::get_id();
      done.store(true, std::memory_order_release);
      word.wake_all();
      if (offer) {
        rig.runner.offer();
      }
    });
  }
  bool wait(Rig& rig) {
    return rig.runner.wait_running_io([this] { return done.load(std::memory_order_acquire); }, word,
                                      would_run, std::chrono::steady_clock::time_point::max(),
                                      IoRunner::Then::waits_again);
  }
};

constexpr auto kForever = std::chrono::hours(1);  // the io thread never takes it back by itself

/// Runs one answer through the io thread, which lets the io context go after it.
void let_go(Rig& rig) {
  Answer first;
  first.post(rig, true);
  REQUIRE(first.wait(rig));
  CHECK(first.ran_on == rig.thread.get_id());
}

}  // namespace

TEST_CASE(
    "io runner: while the io thread runs the io context a waiter sleeps, and it answers on the io "
    "thread",
    "[io_runner]") {
  Rig rig(kForever);
  Answer a;
  a.post(rig, false);
  REQUIRE(a.wait(rig));
  CHECK(a.ran_on == rig.thread.get_id());
}

TEST_CASE(
    "io runner: once the io thread let go, the waiter runs the next handlers on its own thread",
    "[io_runner]") {
  Rig rig(kForever);
  let_go(rig);
  // The io thread ran nothing after the first handler: this one is run by the waiter (it takes
  // the io context at once, or is woken to take it when the io thread lets go).
  Answer second;
  second.post(rig, false);
  REQUIRE(second.wait(rig));
  CHECK(second.ran_on == std::this_thread::get_id());
  Answer third;
  third.post(rig, false);
  REQUIRE(third.wait(rig));
  CHECK(third.ran_on == std::this_thread::get_id());
}

TEST_CASE("io runner: the io thread takes the io context back when no waiter runs it",
          "[io_runner]") {
  Rig rig(std::chrono::microseconds(200));
  let_go(rig);
  // No waiter now: a handler posted here runs on the io thread once it took the io context back.
  std::promise<std::thread::id> ran;
  boost::asio::post(rig.io, [&ran] { ran.set_value(std::this_thread::get_id()); });
  CHECK(ran.get_future().get() == rig.thread.get_id());
}

TEST_CASE("io runner: work another thread posts while the io context is let go wakes the io thread",
          "[io_runner]") {
  Rig rig(kForever);  // only the post can bring the io thread back
  let_go(rig);
  std::promise<std::thread::id> ran;
  std::thread other([&] {
    boost::asio::post(rig.io, [&ran] { ran.set_value(std::this_thread::get_id()); });
    rig.runner.posted();
  });
  CHECK(ran.get_future().get() == rig.thread.get_id());
  other.join();
}

TEST_CASE(
    "io runner: a waiter sleeping while another runs the io context takes it over when that one is "
    "done",
    "[io_runner]") {
  Rig rig(kForever);
  let_go(rig);  // the io thread let go (or is about to)
  // The main thread runs the io context for `held`, whose handler is posted only once the other
  // waiter sleeps; that waiter's answer is posted behind it.
  Answer held;
  Answer other;
  std::atomic<bool> other_in_time{false};  // Catch2 assertions stay on the test's thread
  std::thread second([&] { other_in_time = other.wait(rig); });
  std::thread poster([&] {
    while (rig.runner.sleeping() == 0) {
      std::this_thread::yield();
    }
    held.post(rig, false);
  });
  // Until `held` comes, this thread runs the io context (the io thread let go after let_go()), or
  // sleeps while the other waiter runs it; either way both answers come.
  REQUIRE(held.wait(rig));
  poster.join();
  other.post(rig, false);
  second.join();
  CHECK(other_in_time.load());
  CHECK(rig.errors.load() == 0);
}

TEST_CASE("io runner: a handler's exception is reported and the waiter keeps running",
          "[io_runner]") {
  Rig rig(kForever);
  let_go(rig);
  boost::asio::post(rig.io, [] { throw std::runtime_error("boom"); });
  Answer next;
  next.post(rig, false);
  REQUIRE(next.wait(rig));
  CHECK(next.ran_on == std::this_thread::get_id());
  CHECK(rig.errors.load() == 1);
}

TEST_CASE(
    "io runner: a stop ends the io thread while a waiter runs the io context, and the waiter then "
    "sleeps",
    "[io_runner]") {
  Rig rig(kForever);
  let_go(rig);
  Answer never;  // no handler answers it: the waiter runs the io context until the stop
  std::atomic<bool> in_time{false};
  std::thread waiter([&] { in_time = never.wait(rig); });
  rig.stop();  // returns once the io thread ended
  CHECK_FALSE(never.done.load());
  never.done.store(true, std::memory_order_release);  // what the RPC engine's stop does
  never.word.wake_all();
  waiter.join();
  CHECK(in_time.load());
}

TEST_CASE("io runner: a waiter's deadline ends its wait while it runs the io context",
          "[io_runner]") {
  Rig rig(kForever);
  let_go(rig);
  Answer never;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  CHECK_FALSE(rig.runner.wait_running_io([&] { return never.done.load(); }, never.word,
                                         never.would_run, deadline, IoRunner::Then::waits_again));
  CHECK(std::chrono::steady_clock::now() >= deadline);
}

TEST_CASE(
    "io runner: after a run for a thread that runs jobs next, that thread's posts bring the io "
    "thread back",
    "[io_runner]") {
  Rig rig(kForever);
  let_go(rig);
  Answer mine;  // run by this thread, which lets the io context go when it has its answer
  mine.post(rig, false);
  REQUIRE(rig.runner.wait_running_io([&] { return mine.done.load(std::memory_order_acquire); }, mine.word,
                                     mine.would_run, std::chrono::steady_clock::time_point::max(),
                                     IoRunner::Then::runs_jobs));
  CHECK(mine.ran_on == std::this_thread::get_id());
  std::promise<std::thread::id> ran;
  boost::asio::post(rig.io, [&ran] { ran.set_value(std::this_thread::get_id()); });
  rig.runner.posted();
  CHECK(ran.get_future().get() == rig.thread.get_id());
}

TEST_CASE("io runner: want() brings the io thread back at once when no thread runs the io context",
          "[io_runner]") {
  Rig rig(kForever);  // only want() can bring the io thread back
  let_go(rig);
  Answer mine;  // run by this thread: once it has its answer, no thread runs the io context
  mine.post(rig, false);
  REQUIRE(mine.wait(rig));
  CHECK(mine.ran_on == std::this_thread::get_id());
  rig.runner.want();
  // Posted without posted(): only the io thread, back at its run, can run it.
  std::promise<std::thread::id> ran;
  boost::asio::post(rig.io, [&ran] { ran.set_value(std::this_thread::get_id()); });
  CHECK(ran.get_future().get() == rig.thread.get_id());
}

namespace {
/// A connection whose write was put off: records the thread that wrote it, and whether the
/// handler `before` had run by then.
struct PutOff final : ditask::detail::HeldWrite {
  PutOff() = default;
  PutOff(const PutOff&) = delete;
  PutOff& operator=(const PutOff&) = delete;
  virtual ~PutOff() = default;
  std::atomic<bool> written{false};
  std::thread::id on;
  const std::atomic<bool>* before = nullptr;
  bool before_ran = false;
  void write_held() noexcept override {
    on = std::this_thread::get_id();
    before_ran = before != nullptr && before->load();
    written = true;
  }
};

/// Makes this thread the waiter the io context was let go to (it ran it for its answer).
void become_waiter(Rig& rig) {
  let_go(rig);
  Answer mine;
  mine.post(rig, false);
  REQUIRE(mine.wait(rig));
  REQUIRE(mine.ran_on == std::this_thread::get_id());
}
}  // namespace

TEST_CASE(
    "io runner: a waiter's deferred write goes out from it when it next takes the io context, "
    "before any handler",
    "[io_runner]") {
  Rig rig(kForever);
  CHECK_FALSE(rig.runner.defers_here());  // a thread that never ran it
  become_waiter(rig);
  REQUIRE(rig.runner.defers_here());
  auto link = std::make_shared<PutOff>();
  Answer next;
  link->before = &next.done;
  REQUIRE(rig.runner.defer_write(link));
  next.post(rig, false);
  REQUIRE(next.wait(rig));
  CHECK(link->written.load());
  CHECK(link->on == std::this_thread::get_id());
  CHECK_FALSE(link->before_ran);
}

TEST_CASE("io runner: the io thread writes the deferred writes when it takes the io context back",
          "[io_runner]") {
  Rig rig(kForever);
  become_waiter(rig);
  auto link = std::make_shared<PutOff>();
  REQUIRE(rig.runner.defer_write(link));
  rig.runner.want();  // as when a call that is not quick begins (or the idle period passed)
  std::promise<std::thread::id> ran;  // runs once the io thread runs the io context again
  boost::asio::post(rig.io, [&ran] { ran.set_value(std::this_thread::get_id()); });
  CHECK(ran.get_future().get() == rig.thread.get_id());
  CHECK(link->written.load());
  CHECK(link->on == rig.thread.get_id());
}

TEST_CASE("io runner: no write is deferred while a thread runs the io context", "[io_runner]") {
  Rig rig(kForever);  // the io thread runs it
  CHECK_FALSE(rig.runner.defer_write(std::make_shared<PutOff>()));
}
