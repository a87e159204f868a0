// SPDX-License-Identifier: MIT
// The event system: on / once / off / emit / sync, typed handlers, handler failures, ordering.
// Ports DI-engine's test_event_loop.py and pins the fixed defects of reference/diengine.md §3.3.
// Catch2 assertions run on the test thread only; handlers just record what they saw.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "internal_access.hpp"
#include <ditask/ditask.hpp>

using namespace std::chrono_literals;

namespace {

/// A user type that travels through nlohmann to_json / from_json.
struct Point {
  int x = 0;
  std::string name;
  bool operator==(const Point&) const = default;
};
void to_json(ditask::json& j, const Point& p) { j = ditask::json{{"x", p.x}, {"name", p.name}}; }
void from_json(const ditask::json& j, Point& p) {
  j.at("x").get_to(p.x);
  j.at("name").get_to(p.name);
}

/// Runs `fn` and returns the HandlerError it threw, if any.
template <class F>
std::optional<ditask::HandlerError> handler_error_from(F&& fn) {
  try {
    fn();
  } catch (const ditask::HandlerError& e) {
    return e;
  }
  return std::nullopt;
}

/// The text of the exception an exception_ptr holds.
std::string cause_text(const std::exception_ptr& cause) {
  try {
    std::rethrow_exception(cause);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown";
  }
}

}  // namespace

TEST_CASE("emit and on before start throw ditask::Error", "[task][events]") {
  auto& task = ditask::task();
  REQUIRE_FALSE(task.running());
  CHECK_THROWS_AS(task.emit("early", 1), ditask::Error);
  CHECK_THROWS_AS(task.on("early", [](int) {}), ditask::Error);
  CHECK_THROWS_AS(task.once("early", [](int) {}), ditask::Error);

  auto running = task.start();
  CHECK(task.running());
  CHECK_NOTHROW(task.on("early", [](int) {}));
  CHECK_NOTHROW(task.emit("early", 1));
  CHECK_NOTHROW(task.sync());
}

TEST_CASE("five emits of 0..4 reach an on handler and sum to 10 after sync", "[task][events]") {
  auto& task = ditask::task();
  auto running = task.start();
  int total = 0;
  task.on("count", [&total](int n) { total += n; });
  for (int i = 0; i < 5; ++i) {
    task.emit("count", i);
  }
  task.sync();
  CHECK(total == 10);
}

TEST_CASE("off(pattern) removes every handler of every matching event", "[task][events]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<std::string> seen;
  task.on("a.x", [&seen](const ditask::EventArgs&) { seen.emplace_back("a.x 1"); });
  task.on("a.x", [&seen](const ditask::EventArgs&) { seen.emplace_back("a.x 2"); });
  task.on("a.y", [&seen](const ditask::EventArgs&) { seen.emplace_back("a.y"); });
  task.on("b", [&seen](const ditask::EventArgs&) { seen.emplace_back("b"); });
  REQUIRE(ditask::detail::TaskAccess::handler_count(task, "a.x") == 2);

  CHECK(task.off("a.*") == 3);
  CHECK(ditask::detail::TaskAccess::handler_count(task, "a.x") == 0);
  CHECK(ditask::detail::TaskAccess::handler_count(task, "a.y") == 0);
  CHECK(ditask::detail::TaskAccess::handler_count(task, "b") == 1);
  CHECK(task.off("nothing.*") == 0);

  task.emit("a.x");
  task.emit("a.y");
  task.emit("b");
  task.sync();
  CHECK(seen == std::vector<std::string>{"b"});
}

TEST_CASE("off(event, id) removes only that handler", "[task][events]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<std::string> seen;
  auto first = task.on("x", [&seen](const ditask::EventArgs&) { seen.emplace_back("first"); });
  auto second = task.on("x", [&seen](const ditask::EventArgs&) { seen.emplace_back("second"); });
  CHECK(first != second);

  CHECK(task.off("x", first));
  CHECK_FALSE(task.off("x", first));  // no longer registered
  CHECK_FALSE(task.off("y", second));  // wrong event
  CHECK(ditask::detail::TaskAccess::handler_count(task, "x") == 1);

  task.emit("x");
  task.sync();
  CHECK(seen == std::vector<std::string>{"second"});
}

TEST_CASE("two once handlers run for the first emit only", "[task][events]") {
  auto& task = ditask::task();
  auto running = task.start();
  int total = 0;
  task.once("add", [&total](int n) { total += n; });
  task.once("add", [&total](int n) { total += n; });
  task.emit("add", 10);
  task.sync();
  CHECK(total == 20);
  CHECK(ditask::detail::TaskAccess::handler_count(task, "add") == 0);

  task.emit("add", 10);
  task.sync();
  CHECK(total == 20);
}

TEST_CASE("typed handlers receive int, string, a custom struct and bytes", "[task][events]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<int> ints;
  std::vector<std::string> strings;
  std::vector<Point> points;
  std::vector<std::vector<std::uint8_t>> blobs;
  bool blob_was_binary = false;
  std::pair<std::int64_t, double> pair_seen{};

  task.on("int", [&ints](int v) { ints.push_back(v); });
  task.on("string", [&strings](const std::string& s) { strings.push_back(s); });
  task.on("point", [&points](Point p) { points.push_back(std::move(p)); });
  task.on("bytes", [&blobs](std::vector<std::uint8_t> b) { blobs.push_back(std::move(b)); });
  task.on("bytes", [&blob_was_binary](const ditask::EventArgs& a) {
    blob_was_binary = a.args.at(0).is_binary();
  });
  task.on("pair", [&pair_seen](std::int64_t a, double b) { pair_seen = {a, b}; });

  const std::vector<std::uint8_t> bytes{0x00, 0x01, 0x7f, 0x80, 0xff};
  task.emit("int", 42);
  task.emit("string", std::string("Hi"));
  task.emit("string", "literal");
  task.emit("point", Point{7, "seven"});
  task.emit("bytes", bytes);
  task.emit("pair", std::int64_t{1} << 40, 2.5);
  task.sync();

  CHECK(ints == std::vector<int>{42});
  CHECK(strings == std::vector<std::string>{"Hi", "literal"});
  REQUIRE(points.size() == 1);
  CHECK(points[0] == Point{7, "seven"});
  REQUIRE(blobs.size() == 1);
  CHECK(blobs[0] == bytes);
  CHECK(blob_was_binary);
  CHECK(pair_seen.first == (std::int64_t{1} << 40));
  CHECK(pair_seen.second == 2.5);
}

TEST_CASE("named arguments made with kw reach a handler whose last parameter is Kwargs",
          "[task][events][kwargs]") {
  auto& task = ditask::task();
  auto running = task.start();
  struct Seen {
    int step = 0;
    std::size_t count = 0;
    double reward = 0.0;
    std::string who;
    int fallback = 0;
  };
  std::vector<Seen> seen;
  task.on("step", [&seen](int step, const ditask::Kwargs& k) {
    seen.push_back(Seen{step, k.size(), k.get_or("reward", -1.0), k.get_or<std::string>("who", "nobody"),
                        k.get_or("missing", 7)});
  });
  task.emit("step", 3, ditask::kw("reward", 1.5), ditask::kw("who", std::string("learner")));
  task.emit("step", 4);  // no named arguments: an empty Kwargs
  task.sync();

  REQUIRE(seen.size() == 2);
  CHECK(seen[0].step == 3);
  CHECK(seen[0].count == 2);
  CHECK(seen[0].reward == 1.5);
  CHECK(seen[0].who == "learner");
  CHECK(seen[0].fallback == 7);
  CHECK(seen[1].step == 4);
  CHECK(seen[1].count == 0);
  CHECK(seen[1].reward == -1.0);
  CHECK(seen[1].who == "nobody");
}

TEST_CASE("a handler taking const EventArgs& gets positional and named arguments raw",
          "[task][events][kwargs]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<ditask::EventArgs> seen;
  task.on("raw", [&seen](const ditask::EventArgs& a) { seen.push_back(a); });
  task.emit("raw", 1, std::string("two"), ditask::kw("three", 3.0));
  task.emit("raw");
  task.sync();

  REQUIRE(seen.size() == 2);
  CHECK(seen[0].size() == 2);
  CHECK(seen[0].get<int>(0) == 1);
  CHECK(seen[0].get<std::string>(1) == "two");
  CHECK(seen[0].named().get<double>("three") == 3.0);
  CHECK(seen[0].kwargs == ditask::json{{"three", 3.0}});
  CHECK(seen[1].size() == 0);
  CHECK(seen[1].kwargs.empty());
}

TEST_CASE("EventArgs and Kwargs accessors throw ditask::Error naming the argument", "[events][args]") {
  auto args = ditask::EventArgs::from(1, std::string("s"), ditask::kw("k", 2));
  CHECK(args.size() == 2);
  CHECK(args.get<int>(0) == 1);
  CHECK_THROWS_AS(args.get<int>(1), ditask::Error);             // wrong type
  CHECK_THROWS_WITH(args.get<int>(5), Catch::Contains("argument 5"));  // out of range
  auto named = args.named();
  CHECK(named.contains("k"));
  CHECK(named.get<int>("k") == 2);
  CHECK_THROWS_WITH(named.get<int>("absent"), Catch::Contains("absent"));
  CHECK_THROWS_AS(named.get<std::string>("k"), ditask::Error);
}

TEST_CASE("a handler whose parameters do not fit is reported once as HandlerError naming the event",
          "[task][events][errors]") {
  auto& task = ditask::task();
  auto running = task.start();
  int typed_calls = 0;
  int ok_calls = 0;
  task.on("typed", [&typed_calls](int) { ++typed_calls; });
  task.on("ok", [&ok_calls](const ditask::EventArgs&) { ++ok_calls; });

  SECTION("a string emitted for an int parameter") { task.emit("typed", std::string("not a number")); }
  SECTION("too many arguments") { task.emit("typed", 1, 2); }
  SECTION("too few arguments") { task.emit("typed"); }
  SECTION("named arguments the handler does not take") { task.emit("typed", 1, ditask::kw("extra", true)); }

  auto err = handler_error_from([&task] { task.sync(); });
  REQUIRE(err.has_value());
  CHECK(err->event() == "typed");
  CHECK_THAT(err->what(), Catch::StartsWith("handler for event 'typed' failed: "));
  CHECK_THROWS_AS(std::rethrow_exception(err->cause()), ditask::Error);
  CHECK(typed_calls == 0);

  // Reported exactly once, and the event system still works.
  CHECK_NOTHROW(task.sync());
  CHECK_NOTHROW(task.emit("ok"));
  task.emit("typed", 5);
  CHECK_NOTHROW(task.sync());
  CHECK(ok_calls == 1);
  CHECK(typed_calls == 1);
}

TEST_CASE("a handler failure surfaces from the next emit on the test thread", "[task][events][errors]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::latch bad_handler_done{1};
  task.on("bad", [&task](int) {
    task.emit("probe");  // from the dispatcher: runs after this handler failed
    throw std::runtime_error("bad handler");
  });
  task.on("probe", [&bad_handler_done](const ditask::EventArgs&) { bad_handler_done.count_down(); });
  int others = 0;
  task.on("other", [&others] { ++others; });

  task.emit("bad", 1);  // the only emit before the failure is known to have happened
  bad_handler_done.wait();

  auto err = handler_error_from([&task] { task.emit("other"); });
  REQUIRE(err.has_value());
  CHECK(err->event() == "bad");
  CHECK(cause_text(err->cause()) == "bad handler");
  CHECK(std::string(err->what()) == "handler for event 'bad' failed: bad handler");

  CHECK_NOTHROW(task.emit("other"));
  CHECK_NOTHROW(task.sync());
  // The emit that reported the failure still emitted its own event: nothing is lost.
  CHECK(others == 2);
}

TEST_CASE("a throwing handler is reported and later events are still dispatched", "[task][events][errors]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<int> later;
  task.on("boom", [&task](const ditask::EventArgs&) {
    // Queued behind the failing event (from the dispatcher, so no emit here can report it).
    task.emit("later", 1);
    task.emit("later", 2);
    throw std::runtime_error("kaboom");
  });
  task.on("later", [&later](int n) { later.push_back(n); });

  task.emit("boom");
  auto err = handler_error_from([&task] { task.sync(); });
  REQUIRE(err.has_value());
  CHECK(err->event() == "boom");
  CHECK_THROWS_AS(std::rethrow_exception(err->cause()), std::runtime_error);
  CHECK(ditask::describe(err->cause()) == "kaboom");

  CHECK_NOTHROW(task.sync());
  CHECK(later == std::vector<int>{1, 2});
  task.emit("later", 3);
  task.sync();
  CHECK(later == std::vector<int>{1, 2, 3});
}

TEST_CASE("one emit reaches each handler exactly once, in registration order", "[task][events][defects]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<std::string> calls;
  task.on("x", [&calls](const ditask::EventArgs&) { calls.emplace_back("f1"); });
  task.on("x", [&calls](const ditask::EventArgs&) { calls.emplace_back("f2"); });
  task.on("x", [&calls](const ditask::EventArgs&) { calls.emplace_back("f3"); });
  task.emit("x");
  task.sync();
  CHECK(calls == std::vector<std::string>{"f1", "f2", "f3"});
}

TEST_CASE("1000 emits from one thread arrive in emit order", "[task][events][order][defects]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<int> got;
  task.on("seq", [&got](int i) { got.push_back(i); });
  for (int i = 0; i < 1000; ++i) {
    task.emit("seq", i);
  }
  task.sync();
  std::vector<int> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(got == expected);
}

TEST_CASE("emits from two threads each arrive in their own order", "[task][events][order][defects]") {
  auto& task = ditask::task();
  auto running = task.start();
  constexpr int kPerThread = 500;
  std::map<int, std::vector<int>> got;
  task.on("seq", [&got](int sender, int i) { got[sender].push_back(i); });
  {
    std::latch go{2};
    auto sender = [&task, &go](int id) {
      go.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) {
        task.emit("seq", id, i);
      }
    };
    std::jthread a(sender, 0);
    std::jthread b(sender, 1);
  }
  task.sync();
  std::vector<int> expected(kPerThread);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(got[0] == expected);
  CHECK(got[1] == expected);
}

TEST_CASE("emit_local reaches local handlers, emit_remote is a no-op while the router is inactive",
          "[task][events]") {
  auto& task = ditask::task();
  REQUIRE_FALSE(task.router().is_active());
  auto running = task.start();
  std::vector<int> got;
  task.on("scoped", [&got](int v) { got.push_back(v); });
  task.emit_remote("scoped", 1);
  task.emit_local("scoped", 2);
  task.emit_args("scoped", ditask::EventArgs::from(3), ditask::Scope::only_remote);
  task.emit_args("scoped", ditask::EventArgs::from(4), ditask::Scope::only_local);
  task.emit("scoped", 5);  // local + remote: local only while inactive
  task.sync();
  CHECK(got == std::vector<int>{2, 4, 5});
}

TEST_CASE("a handler may emit, and sync inside a handler does not deadlock", "[task][events]") {
  auto& task = ditask::task();
  auto running = task.start();
  auto chained = task.waiter("second");
  task.on("first", [&task](int n) {
    task.sync();  // on the dispatcher thread: skips waiting for handlers
    task.emit("second", n + 1);
  });
  task.emit("first", 1);
  auto got = chained.wait(10s);
  REQUIRE(got.has_value());
  CHECK(got->get<int>(0) == 2);
  CHECK_NOTHROW(task.sync());
}

TEST_CASE("stop runs queued handlers and drops every handler", "[task][events][lifecycle]") {
  auto& task = ditask::task();
  int total = 0;
  {
    auto running = task.start();
    task.on("queued", [&total](int n) { total += n; });
    for (int i = 0; i < 100; ++i) {
      task.emit("queued", 1);
    }
    running.stop();  // no sync: stop itself runs what was queued
    CHECK_FALSE(task.running());
  }
  CHECK(total == 100);

  auto running = task.start();
  CHECK(ditask::detail::TaskAccess::handler_count(task, "queued") == 0);
  task.emit("queued", 1);
  task.sync();
  CHECK(total == 100);
}

TEST_CASE("a handler without parameters takes an emit without arguments", "[task][events]") {
  auto& task = ditask::task();
  auto running = task.start();
  int ticks = 0;
  task.on("tick", [&ticks] { ++ticks; });
  task.emit("tick");
  task.sync();
  CHECK(ticks == 1);

  task.emit("tick", 1);  // one argument too many
  std::optional<ditask::HandlerError> err = handler_error_from([&task] { task.sync(); });
  REQUIRE(err.has_value());
  CHECK(err->event() == "tick");
  CHECK(ticks == 1);
}

TEST_CASE("a handler's ditask::Error keeps its hint in the HandlerError", "[task][events][errors]") {
  auto& task = ditask::task();
  auto running = task.start();
  task.on("hinted", [] { throw ditask::Error("the model file is missing", "pass --model PATH"); });
  task.on("plain", [] { throw std::runtime_error("no hint here"); });
  task.emit("hinted");
  std::optional<ditask::HandlerError> err = handler_error_from([&task] { task.sync(); });
  REQUIRE(err.has_value());
  CHECK(std::string(err->what()) == "handler for event 'hinted' failed: the model file is missing");
  CHECK(err->hint() == "pass --model PATH");
  task.emit("plain");
  err = handler_error_from([&task] { task.sync(); });
  REQUIRE(err.has_value());
  CHECK(err->hint().empty());
}
