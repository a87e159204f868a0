// SPDX-License-Identifier: MIT
// Events that run on arrival (Task::on_inline, waiters): run by the thread that hands them to
// the bus when the bus is idle, queued in order behind whatever the dispatcher has, and refused
// any wait of the runtime.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "ditask/error.hpp"
#include "event_bus.hpp"

using ditask::detail::EventBus;
using ditask::detail::RemoteEvent;

namespace {

RemoteEvent remote(const std::string& name, int n) {
  RemoteEvent e;
  e.event = name;
  e.args = ditask::EventArgs::from(n);
  e.seq = static_cast<std::uint64_t>(n) + 1;
  e.bytes = 16;
  return e;
}

/// What the handlers saw, in order, and on which thread each ran.
struct Runs {
  std::mutex mutex;
  std::vector<int> values;
  std::vector<std::thread::id> threads;
  ditask::detail::ErasedHandler handler() {
    return [this](const ditask::EventArgs& args, const ditask::EventMeta&) {
      std::lock_guard lock(mutex);
      values.push_back(args.get<int>(0));
      threads.push_back(std::this_thread::get_id());
    };
  }
};

/// Holds the dispatcher in a handler until opened.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool entered = false;
  bool open = false;
  void enter_and_wait() {
    std::unique_lock lock(mutex);
    entered = true;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
  }
  void wait_entered() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

struct Failures {
  std::mutex mutex;
  std::vector<std::string> texts;
};

std::shared_ptr<EventBus> live_bus(Failures* failures = nullptr) {
  auto bus = std::make_shared<EventBus>([failures](const std::string& event, std::exception_ptr error) {
    if (failures == nullptr) {
      return;
    }
    try {
      std::rethrow_exception(error);
    } catch (const ditask::Error& e) {
      std::lock_guard lock(failures->mutex);
      failures->texts.push_back(event + ": " + e.what() + " | " + e.hint());
    } catch (...) {
      std::lock_guard lock(failures->mutex);
      failures->texts.push_back(event + ": other");
    }
  });
  bus->start();
  bus->end_startup_window();
  return bus;
}

void post(EventBus& bus, std::vector<RemoteEvent> events) { bus.post_remote(std::move(events)); }

}  // namespace

TEST_CASE("event bus: an event whose handlers all run on arrival runs on the receiving thread when the bus is idle",
          "[events][arrival]") {
  auto bus = live_bus();
  Runs runs;
  bus->add("fast", runs.handler(), false, nullptr, true);
  std::vector<RemoteEvent> batch;
  batch.push_back(remote("fast", 1));
  batch.push_back(remote("fast", 2));
  post(*bus, std::move(batch));
  {
    std::lock_guard lock(runs.mutex);  // ran before post_remote returned, on this thread
    CHECK(runs.values == std::vector<int>{1, 2});
    CHECK(runs.threads == std::vector<std::thread::id>{std::this_thread::get_id(), std::this_thread::get_id()});
  }
  bus->drain();  // counted as dispatched: returns at once
  bus->stop();
}

TEST_CASE("event bus: an event that runs on arrival waits in order behind what the dispatcher has",
          "[events][arrival]") {
  auto bus = live_bus();
  Runs runs;
  Gate gate;
  auto slow = runs.handler();
  bus->add("slow", [&](const ditask::EventArgs& args, const ditask::EventMeta& meta) {
    slow(args, meta);
    gate.enter_and_wait();
  }, false);
  bus->add("fast", runs.handler(), false, nullptr, true);
  post(*bus, {remote("slow", 0)});
  gate.wait_entered();
  post(*bus, {remote("fast", 1), remote("slow", 2), remote("fast", 3)});
  {
    std::lock_guard lock(runs.mutex);
    CHECK(runs.values == std::vector<int>{0});  // nothing ran here: the dispatcher was busy
  }
  gate.release();
  bus->drain();
  std::lock_guard lock(runs.mutex);
  CHECK(runs.values == std::vector<int>{0, 1, 2, 3});
  REQUIRE(runs.threads.size() == 4);
  for (const auto& id : runs.threads) {
    CHECK(id != std::this_thread::get_id());
  }
}

TEST_CASE("event bus: of a batch, the leading events that run on arrival run here, the rest after them in order",
          "[events][arrival]") {
  auto bus = live_bus();
  Runs runs;
  bus->add("fast", runs.handler(), false, nullptr, true);
  bus->add("mixed", runs.handler(), false, nullptr, true);
  bus->add("mixed", runs.handler(), false);  // one handler that may wait: the dispatcher's
  post(*bus, {remote("fast", 0), remote("fast", 1), remote("mixed", 2), remote("fast", 3)});
  bus->drain();
  std::lock_guard lock(runs.mutex);
  CHECK(runs.values == std::vector<int>{0, 1, 2, 2, 3});
  REQUIRE(runs.threads.size() == 5);
  CHECK(runs.threads[0] == std::this_thread::get_id());
  CHECK(runs.threads[1] == std::this_thread::get_id());
  CHECK(runs.threads[2] != std::this_thread::get_id());
  CHECK(runs.threads[4] != std::this_thread::get_id());
}

TEST_CASE("event bus: a waiter is woken by the receiving thread when the bus is idle", "[events][arrival]") {
  auto bus = live_bus();
  auto state = bus->add_waiter("answer");
  post(*bus, {remote("answer", 42)});
  std::lock_guard lock(state->mutex);  // stored before post_remote returned
  REQUIRE(state->result.has_value());
  CHECK(state->result->get<int>(0) == 42);
}

TEST_CASE("event bus: a wait inside a handler that runs on arrival is refused", "[events][arrival]") {
  Failures failures;
  auto bus = live_bus(&failures);
  std::weak_ptr<EventBus> weak = bus;
  bus->add("fast", [weak](const ditask::EventArgs&, const ditask::EventMeta&) { weak.lock()->drain(); }, false,
           nullptr, true);
  post(*bus, {remote("fast", 0)});
  std::lock_guard lock(failures.mutex);
  CHECK(failures.texts == std::vector<std::string>{
                              "fast: a handler of event 'fast' (registered with on_inline) cannot wait for the event "
                              "handlers: it runs on the thread that receives this node's events and calls | register "
                              "it with on() instead, which may wait"});
}

TEST_CASE("event bus: stop() waits for a handler running on arrival, and the dispatcher stays out meanwhile",
          "[events][arrival]") {
  auto bus = live_bus();
  Runs runs;
  Gate gate;
  auto record = runs.handler();
  bus->add("fast", [&](const ditask::EventArgs& args, const ditask::EventMeta& meta) {
    gate.enter_and_wait();
    record(args, meta);
  }, false, nullptr, true);
  bus->add("slow", runs.handler(), false);
  std::thread receiving([&] { post(*bus, {remote("fast", 0), remote("slow", 1)}); });
  gate.wait_entered();  // the receiving thread runs "fast"; "slow" waits queued behind it
  std::atomic<bool> stopped{false};
  std::thread stopping([&] {
    bus->stop();
    stopped = true;
  });
  {
    std::lock_guard lock(runs.mutex);
    CHECK(runs.values.empty());  // the dispatcher did not run "slow" ahead of "fast"
  }
  CHECK_FALSE(stopped.load());  // it cannot have returned: "fast" still runs
  gate.release();
  stopping.join();
  receiving.join();
  CHECK(stopped.load());
  std::lock_guard lock(runs.mutex);
  CHECK(runs.values == std::vector<int>{0, 1});  // queued before stop(): it still ran, after
}

TEST_CASE("event bus: a handler running on arrival that throws is reported as any handler's failure",
          "[events][arrival]") {
  Failures failures;
  auto bus = live_bus(&failures);
  bus->add("fast", [](const ditask::EventArgs&, const ditask::EventMeta&) { throw ditask::Error("no model", "load it"); },
           false, nullptr, true);
  post(*bus, {remote("fast", 0)});
  std::lock_guard lock(failures.mutex);
  CHECK(failures.texts == std::vector<std::string>{"fast: no model | load it"});
}
