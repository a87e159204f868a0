// SPDX-License-Identifier: MIT
// The startup window of the event bus: remote events that come before their handlers are kept,
// and every handler registered in the window sees each of them exactly once, in arrival order,
// however the registrations and the dispatcher interleave; a waiter takes them one at a time and
// does not end the window; ready() ends it and counts what nobody saw.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "event_bus.hpp"

using namespace std::chrono_literals;
using ditask::detail::EventBus;
using ditask::detail::RemoteEvent;

namespace {

/// Counts what the bus tells a link about its events.
class CountingReceipt : public ditask::detail::Receipt {
 public:
  void done(std::uint64_t, std::size_t, bool handled) noexcept override {
    (handled ? handled_ : unhandled_).fetch_add(1);
  }
  std::atomic<int> handled_{0};
  std::atomic<int> unhandled_{0};
};

/// A remote event `name` carrying the number `n`, as a peer's io thread hands it over.
RemoteEvent remote(const std::string& name, int n, const std::shared_ptr<CountingReceipt>& receipt = nullptr) {
  RemoteEvent e;
  e.event = name;
  e.args = ditask::EventArgs::from(n);
  e.receipt = receipt;
  e.seq = static_cast<std::uint64_t>(n) + 1;
  e.bytes = 16;
  return e;
}

void post(EventBus& bus, const std::string& name, int from, int to,
          const std::shared_ptr<CountingReceipt>& receipt = nullptr) {
  std::vector<RemoteEvent> events;
  for (int n = from; n < to; ++n) {
    events.push_back(remote(name, n, receipt));
  }
  bus.post_remote(std::move(events));
}

std::shared_ptr<EventBus> started_bus() {
  auto bus = std::make_shared<EventBus>([](const std::string&, std::exception_ptr) {});
  bus->start();
  return bus;
}

/// What one handler saw (written on the dispatcher thread, read after drain()).
struct Seen {
  std::mutex mutex;
  std::vector<int> values;
  ditask::detail::ErasedHandler handler() {
    return [this](const ditask::EventArgs& args, const ditask::EventMeta&) {
      std::lock_guard lock(mutex);
      values.push_back(args.get<int>(0));
    };
  }
};

std::vector<int> iota(int from, int to) {
  std::vector<int> out;
  for (int n = from; n < to; ++n) {
    out.push_back(n);
  }
  return out;
}

/// The value a waiter got, waiting at most 10 s.
std::optional<int> waited(const std::shared_ptr<ditask::detail::WaitState>& state) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  std::unique_lock lock(state->mutex);
  while (!state->result) {
    const std::uint32_t seen = state->changed.value();
    lock.unlock();
    const bool woken = state->changed.wait(seen, deadline);
    lock.lock();
    if (!woken) {
      break;
    }
  }
  return state->result ? std::optional(state->result->get<int>(0)) : std::nullopt;
}

}  // namespace

TEST_CASE("startup window: handlers registered with a gap of 0, 1 and 50 ms each get every early event once, in order",
          "[events][window]") {
  for (const auto gap : {0ms, 1ms, 50ms}) {
    CAPTURE(gap.count());
    // Races live in the short gaps; 50 ms apart, 20 runs say as much as 200 (and take 1 s, not 10).
    const int runs = gap >= 50ms ? 20 : 200;
    for (int run = 0; run < runs; ++run) {
      CAPTURE(run);
      auto bus = started_bus();
      post(*bus, "ping", 0, 3);  // before any handler: kept
      // More arrive while the handlers are being registered, as a peer keeps sending.
      std::thread net([&] {
        for (int n = 3; n < 6; ++n) {
          post(*bus, "ping", n, n + 1);
          std::this_thread::yield();
        }
      });
      Seen a;
      Seen b;
      bus->add("ping", a.handler(), false);
      // The gap between two registrations is the scenario under test, not a synchronisation:
      // whatever the dispatcher did meanwhile, both handlers must see the same events.
      std::this_thread::sleep_for(gap);
      bus->add("ping", b.handler(), false);
      net.join();
      post(*bus, "ping", 6, 8);  // after both: live
      bus->drain();
      CHECK(a.values == iota(0, 8));
      CHECK(b.values == iota(0, 8));
      bus->stop();
    }
  }
}

TEST_CASE("startup window: waiters take kept events one at a time and do not end the window", "[events][window]") {
  auto bus = started_bus();
  post(*bus, "x", 1, 4);
  post(*bus, "y", 7, 8);
  // Successive waits get successive events, never the same one twice.
  CHECK(waited(bus->add_waiter("x")) == 1);
  CHECK(waited(bus->add_waiter("x")) == 2);
  // The window is still open for other events (and for x): an on() handler now sees y.
  Seen y;
  bus->add("y", y.handler(), false);
  // A handler of x registered now still gets every kept x, the ones waiters took included.
  Seen x;
  bus->add("x", x.handler(), false);
  bus->drain();
  CHECK(y.values == std::vector<int>{7});
  CHECK(x.values == std::vector<int>{1, 2, 3});
  // The next waiter takes the one no waiter took yet, then waits for a live one.
  CHECK(waited(bus->add_waiter("x")) == 3);
  auto live = bus->add_waiter("x");
  post(*bus, "x", 9, 10);
  CHECK(waited(live) == 9);
  bus->stop();
}

TEST_CASE("startup window: ready ends it, what no handler saw is counted once, later handlers see new events only",
          "[events][window]") {
  auto bus = started_bus();
  auto receipt = std::make_shared<CountingReceipt>();
  post(*bus, "z", 0, 2, receipt);  // nobody listens yet: acknowledged as kept
  Seen early;
  bus->add("seen", early.handler(), false);
  post(*bus, "seen", 5, 6, receipt);
  bus->drain();
  CHECK(receipt->handled_ == 3);
  CHECK(receipt->unhandled_ == 0);
  CHECK(bus->kept() == 3);
  bus->end_startup_window();
  CHECK(bus->kept() == 0);
  CHECK(receipt->unhandled_ == 2);  // z 0 and z 1: never seen
  Seen late;
  bus->add("z", late.handler(), false);
  post(*bus, "z", 2, 3, receipt);
  bus->drain();
  CHECK(late.values == std::vector<int>{2});
  CHECK(early.values == std::vector<int>{5});
  bus->end_startup_window();  // idempotent
  CHECK(receipt->unhandled_ == 2);
  bus->stop();
}

TEST_CASE("startup window: a kept event still queued when the window closes is counted by its job", "[events][window]") {
  auto bus = started_bus();
  auto receipt = std::make_shared<CountingReceipt>();
  // The handler ignores "other" (only registered for it after): a kept event of "q" with a live
  // handler, and the window closes at once. However the two interleave, q is handled.
  Seen q;
  bus->add("q", q.handler(), false);
  post(*bus, "q", 0, 1, receipt);
  bus->end_startup_window();
  bus->drain();
  CHECK(q.values == std::vector<int>{0});
  CHECK(receipt->unhandled_ == 0);
  bus->stop();
}

TEST_CASE("startup window: past its bound, events with a handler still run and events without one are dropped and counted",
          "[events][window]") {
  auto bus = started_bus();
  auto receipt = std::make_shared<CountingReceipt>();
  const int bound = static_cast<int>(ditask::detail::StartupWindow::kMaxEvents);
  post(*bus, "k", 0, bound, receipt);
  CHECK(bus->kept() == static_cast<std::size_t>(bound));
  post(*bus, "k", bound, bound + 5, receipt);  // no room, no handler: dropped
  CHECK(receipt->unhandled_ == 5);
  Seen first;
  bus->add("h", first.handler(), false);
  post(*bus, "h", 0, 3, receipt);  // no room, but a handler: it runs, it is not kept
  Seen second;
  bus->add("h", second.handler(), false);
  bus->drain();
  CHECK(first.values == std::vector<int>{0, 1, 2});
  CHECK(second.values.empty());
  Seen k;
  bus->add("k", k.handler(), false);  // the kept ones reach it
  bus->drain();
  CHECK(k.values.size() == static_cast<std::size_t>(bound));
  bus->stop();
}

TEST_CASE("events: a handler registered after an emit does not see that emit", "[events]") {
  auto bus = started_bus();
  bus->end_startup_window();
  Seen before;
  bus->add("e", before.handler(), false);
  bus->post("e", ditask::EventArgs::from(1));
  Seen after;
  bus->add("e", after.handler(), false);
  bus->post("e", ditask::EventArgs::from(2));
  bus->drain();
  CHECK(before.values == std::vector<int>{1, 2});
  CHECK(after.values == std::vector<int>{2});
  bus->stop();
}

TEST_CASE("events: the interest listener hears the handled names once the window closed, as on() and off() change them",
          "[events][window][redis]") {
  auto bus = started_bus();
  std::vector<std::set<std::string>> told;
  bus->set_interest_listener([&](const std::set<std::string>& names) { told.push_back(names); });
  const auto noop = [](const ditask::EventArgs&, const ditask::EventMeta&) {};
  const auto a = bus->add("a", noop, false);
  CHECK(told.empty());  // the window is open: every name counts, nobody is told
  bus->end_startup_window();
  REQUIRE(told.size() == 1);
  CHECK(told.back() == std::set<std::string>{"a"});
  bus->add("b", noop, false);
  REQUIRE(told.size() == 2);
  CHECK(told.back() == std::set<std::string>{"a", "b"});
  bus->add("b", noop, false);  // a second handler of a known name changes nothing
  CHECK(told.size() == 2);
  auto waiter = bus->add_waiter("w");
  REQUIRE(told.size() == 3);
  CHECK(told.back() == std::set<std::string>{"a", "b", "w"});
  bus->remove("w", waiter->handler_id, true);  // a waiter's name stays: the next wait would add it again
  CHECK(told.size() == 3);
  CHECK(bus->remove("a", a));
  REQUIRE(told.size() == 4);
  CHECK(told.back() == std::set<std::string>{"b", "w"});
  CHECK(bus->remove_matching("b") == 2);
  REQUIRE(told.size() == 5);
  CHECK(told.back() == std::set<std::string>{"w"});
  bus->set_interest_listener(nullptr);
  bus->add("c", noop, false);
  CHECK(told.size() == 5);
  bus->stop();
}
