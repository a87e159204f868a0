// SPDX-License-Identifier: MIT
// The middleware pipeline: forward / backward / renew, run, serial / parallel / wrap, locks,
// wrappers, finish. Ports DI-engine's test_task.py pipeline tests without sleeps: concurrency is
// proven with bounded condition waits instead of timing.
// Catch2 assertions run on the test thread only; middleware just records what it saw.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <ditask/ditask.hpp>

using namespace std::chrono_literals;

namespace {

/// The context's "pipeline" list (created on first use), as DI-engine's `ctx.pipeline`.
std::vector<int>& pipeline(ditask::Context& ctx) {
  if (!ctx.has("pipeline")) {
    ctx.set("pipeline", std::vector<int>{});
  }
  return ctx.get<std::vector<int>>("pipeline");
}

/// A thread-safe list of strings that can be waited on.
class Recorder {
 public:
  void add(std::string item) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
    }
    changed_.notify_all();
  }
  /// Waits until `item` was added; false after `limit`.
  bool wait_for_item(const std::string& item, std::chrono::milliseconds limit = 10s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return contains_locked(item); });
  }
  bool contains(const std::string& item) const {
    std::lock_guard lock(mutex_);
    return contains_locked(item);
  }
  std::vector<std::string> items() const {
    std::lock_guard lock(mutex_);
    return items_;
  }

 private:
  bool contains_locked(const std::string& item) const {
    for (const auto& i : items_) {
      if (i == item) {
        return true;
      }
    }
    return false;
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> items_;
};

ditask::StartOptions async_options(int workers = 3) {
  ditask::StartOptions options;
  options.async_mode = true;
  options.n_async_workers = workers;
  return options;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("serial pipeline: forward twice then renew", "[task][middleware]") {
  auto& task = ditask::task();
  auto running = task.start();
  auto step0 = [](ditask::Context& ctx) { pipeline(ctx).push_back(0); };
  auto step1 = [](ditask::Context& ctx) { pipeline(ctx).push_back(1); };
  for (int i = 0; i < 2; ++i) {
    task.forward(step0);
    task.forward(step1);
  }
  CHECK(pipeline(task.ctx()) == std::vector<int>{0, 1, 0, 1});
  task.backward();

  task.renew();
  CHECK(task.ctx().total_step == 1);
  CHECK_FALSE(task.ctx().has("pipeline"));
  task.forward(step0);
  task.forward(step1);
  CHECK(pipeline(task.ctx()) == std::vector<int>{0, 1});
}

TEST_CASE("serial yield pipeline: a middleware's backward part runs on backward()", "[task][middleware]") {
  auto& task = ditask::task();
  auto running = task.start();
  task.forward([](ditask::Context& ctx) -> ditask::Backward {
    pipeline(ctx).push_back(0);
    return [&ctx] { pipeline(ctx).push_back(0); };
  });
  task.forward([](ditask::Context& ctx) { pipeline(ctx).push_back(1); });
  CHECK(pipeline(task.ctx()) == std::vector<int>{0, 1});
  task.backward();
  CHECK(pipeline(task.ctx()) == std::vector<int>{0, 1, 0});
  task.backward();  // the stack is empty now
  CHECK(pipeline(task.ctx()) == std::vector<int>{0, 1, 0});
}

TEST_CASE("async pipeline: forward returns before the middleware ran, sync waits for it",
          "[task][middleware][async]") {
  auto& task = ditask::task();
  auto running = task.start(async_options());
  REQUIRE(task.async_mode());
  std::binary_semaphore go{0};
  int gave_up = 0;  // only touched between syncs
  auto step0 = [&go, &gave_up](ditask::Context& ctx) {
    // Released by the test thread after forward() returned: a forward run inline would give up.
    if (!go.try_acquire_for(10s)) {
      ++gave_up;
    }
    pipeline(ctx).push_back(0);
  };
  auto step1 = [](ditask::Context& ctx) { pipeline(ctx).push_back(1); };
  for (int i = 0; i < 2; ++i) {
    task.forward(step0);
    go.release();
    task.sync();
    task.forward(step1);
    task.sync();
  }
  task.backward();
  task.sync();
  CHECK(pipeline(task.ctx()) == std::vector<int>{0, 1, 0, 1});
  CHECK(gave_up == 0);

  task.renew();
  CHECK(task.ctx().total_step == 1);
}

TEST_CASE("async yield pipeline: backward syncs pending forwards first", "[task][middleware][async]") {
  auto& task = ditask::task();
  auto running = task.start(async_options());
  task.forward([](ditask::Context& ctx) -> ditask::Backward {
    pipeline(ctx).push_back(0);
    return [&ctx] { pipeline(ctx).push_back(0); };
  });
  task.sync();
  task.forward([](ditask::Context& ctx) { pipeline(ctx).push_back(1); });
  task.backward();  // waits for the second forward before running the first backward part
  task.sync();
  CHECK(pipeline(task.ctx()) == std::vector<int>{0, 1, 0});
}

TEST_CASE("run: forwards in order, then backward parts in reverse order", "[task][middleware]") {
  auto& task = ditask::task();
  auto running = task.start();
  Strings order;
  task.use([&order](ditask::Context&) -> ditask::Backward {
    order.emplace_back("A");
    return [&order] { order.emplace_back("A'"); };
  });
  task.use([&order](ditask::Context&) -> ditask::Backward {
    order.emplace_back("B");
    return [&order] { order.emplace_back("B'"); };
  });
  task.use([&order](ditask::Context&) { order.emplace_back("C"); });
  task.run(1);
  CHECK(order == Strings{"A", "B", "C", "B'", "A'"});
}

TEST_CASE("parallel in a sequential pipeline runs its middleware concurrently", "[task][middleware][parallel]") {
  auto& task = ditask::task();
  auto running = task.start();
  Recorder result;
  auto fast = [&result](ditask::Context&) { result.add("fast"); };
  auto slow = [&result](ditask::Context&) {
    // Finishes only after fast did: possible only when both run at once.
    if (!result.wait_for_item("fast")) {
      result.add("slow gave up waiting for fast");
    }
    result.add("slow");
  };
  task.use([&result](ditask::Context&) { result.add("begin"); });
  task.use(task.parallel(slow, fast));
  task.run(1);
  CHECK(result.items() == Strings{"begin", "fast", "slow"});
}

TEST_CASE("parallel runs the backward parts after the rest of the chain", "[task][middleware][parallel]") {
  auto& task = ditask::task();
  auto running = task.start();
  Recorder result;
  auto a = [&result](ditask::Context&) -> ditask::Backward {
    result.add("a");
    return [&result] { result.add("a'"); };
  };
  auto b = [&result](ditask::Context&) -> ditask::Backward {
    result.add("b");
    return [&result] { result.add("b'"); };
  };
  task.use(task.parallel(a, b));
  task.use([&result](ditask::Context&) { result.add("after"); });
  task.run(1);
  auto items = result.items();
  REQUIRE(items.size() == 5);
  // Forwards (in either order), then the rest of the chain, then the backward parts (either order).
  std::sort(items.begin(), items.begin() + 2);
  std::sort(items.begin() + 3, items.end());
  CHECK(items == Strings{"a", "b", "after", "a'", "b'"});
}

TEST_CASE("serial in an async pipeline runs its middleware one after the other", "[task][middleware][async]") {
  auto& task = ditask::task();
  auto running = task.start(async_options());
  Recorder result;
  auto slow = [&result](ditask::Context&) {
    if (!result.wait_for_item("begin")) {  // makes the order with the concurrent "begin" fixed
      result.add("slow gave up waiting for begin");
    }
    result.add("slow");
  };
  auto fast = [&result](ditask::Context&) { result.add("fast"); };
  task.use([&result](ditask::Context&) { result.add("begin"); });
  task.use(task.serial(slow, fast));
  task.run(1);
  CHECK(result.items() == Strings{"begin", "slow", "fast"});
}

TEST_CASE("serial runs forwards in order and backward parts in reverse", "[task][middleware]") {
  auto& task = ditask::task();
  auto running = task.start();
  Strings order;
  auto a = [&order](ditask::Context&) -> ditask::Backward {
    order.emplace_back("a");
    return [&order] { order.emplace_back("a'"); };
  };
  auto b = [&order](ditask::Context&) -> ditask::Backward {
    order.emplace_back("b");
    return [&order] { order.emplace_back("b'"); };
  };
  task.use(task.serial(a, b));
  task.use([&order](ditask::Context&) { order.emplace_back("c"); });
  task.run(1);
  CHECK(order == Strings{"a", "b", "c", "b'", "a'"});
}

TEST_CASE("nested middleware through wrap keeps two-phase semantics", "[task][middleware]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<std::int64_t> result;
  auto child = [&result](ditask::Context& ctx) -> ditask::Backward {
    result.push_back(3 * ctx.total_step);
    return [&result, &ctx] { result.push_back(2 + 3 * ctx.total_step); };
  };
  auto wrapped_child = task.wrap(child);
  task.use([&result, wrapped_child](ditask::Context& ctx) {
    auto child_back = wrapped_child(ctx);
    result.push_back(1 + 3 * ctx.total_step);
    if (child_back) {
      child_back();
    }
  });
  task.run(2);
  CHECK(result == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("use(fn, true) serialises middleware in registration order in async mode", "[task][middleware][lock]") {
  auto& task = ditask::task();
  auto running = task.start(async_options());
  std::mutex m;
  std::condition_variable cv;
  bool fast_started = false;
  bool fast_ran_during_slow = false;
  bool slow_done = false;
  bool fast_saw_slow_done = false;
  task.use(
      [&](ditask::Context& ctx) {
        std::unique_lock lock(m);
        // Simulated work: the window in which a broken lock would let fast start.
        fast_ran_during_slow = cv.wait_for(lock, 20ms, [&] { return fast_started; });
        ctx.set("result", std::string("slow"));
        slow_done = true;
      },
      true);
  task.use(
      [&](ditask::Context& ctx) {
        {
          std::lock_guard lock(m);
          fast_started = true;
          fast_saw_slow_done = slow_done;
        }
        cv.notify_all();
        ctx.set("result", std::string("fast"));
      },
      true);
  task.run(1);
  CHECK(task.ctx().get<std::string>("result") == "fast");
  CHECK(fast_saw_slow_done);
  CHECK_FALSE(fast_ran_during_slow);
}

TEST_CASE("different locks do not serialise each other", "[task][middleware][lock]") {
  auto& task = ditask::task();
  auto running = task.start(async_options(3));
  ditask::Lock lock;
  std::mutex m;  // guards the flags and ctx writes (fast and slowest write concurrently)
  std::condition_variable cv;
  bool slow_done = false;
  bool fast_saw_slow_done = false;
  bool slowest_started = false;
  bool fast_done = false;
  bool fast_timed_out = false;
  bool slowest_timed_out = false;

  task.use(
      [&](ditask::Context& ctx) {
        std::lock_guard guard(m);
        ctx.set("result", std::string("slow"));
        slow_done = true;
      },
      lock);
  task.use(
      [&](ditask::Context& ctx) {
        std::unique_lock guard(m);
        fast_saw_slow_done = slow_done;
        // slowest holds another lock, so it can start while fast holds this one.
        fast_timed_out = !cv.wait_for(guard, 10s, [&] { return slowest_started; });
        ctx.set("result", std::string("fast"));
        fast_done = true;
        cv.notify_all();
      },
      lock);
  task.use(
      [&](ditask::Context& ctx) {
        std::unique_lock guard(m);
        slowest_started = true;
        cv.notify_all();
        slowest_timed_out = !cv.wait_for(guard, 10s, [&] { return fast_done; });
        ctx.set("result", std::string("slowest"));
      },
      true);
  task.run(1);
  CHECK(task.ctx().get<std::string>("result") == "slowest");
  CHECK(fast_saw_slow_done);
  CHECK_FALSE(fast_timed_out);
  CHECK_FALSE(slowest_timed_out);
}

TEST_CASE("Lock copies share one FIFO lock served in ticket order", "[middleware][lock]") {
  ditask::Lock lock;
  const ditask::Lock copy = lock;
  CHECK(copy == lock);
  CHECK_FALSE(lock == ditask::Lock());

  Recorder order;
  const auto first = lock.take_ticket();
  const auto second = copy.take_ticket();
  std::jthread later([&copy, &order, second] {
    copy.acquire(second);
    order.add("second");
    copy.release();
  });
  lock.acquire(first);
  order.add("first");
  lock.release();
  later.join();
  CHECK(order.items() == Strings{"first", "second"});

  auto& task = ditask::task();
  auto running = task.start();
  CHECK(task.shared_lock() == task.shared_lock());
}

TEST_CASE("use_wrapper wraps earlier and later middleware", "[task][middleware]") {
  auto& task = ditask::task();
  auto running = task.start();
  int wrapped_calls = 0;
  int a_calls = 0;
  int b_calls = 0;
  task.use([&a_calls](ditask::Context&) { ++a_calls; });
  task.use_wrapper([&wrapped_calls](ditask::Middleware inner) -> ditask::Middleware {
    return [&wrapped_calls, inner = std::move(inner)](ditask::Context& ctx) -> ditask::Backward {
      ++wrapped_calls;
      return inner(ctx);
    };
  });
  task.use([&b_calls](ditask::Context&) { ++b_calls; });
  task.run(2);
  CHECK(a_calls == 2);
  CHECK(b_calls == 2);
  CHECK(wrapped_calls == 4);
}

TEST_CASE("set_finish ends run after the current step", "[task][middleware][finish]") {
  auto& task = ditask::task();
  auto running = task.start();
  CHECK_FALSE(task.finish());
  int steps = 0;
  task.use([&task, &steps](ditask::Context& ctx) {
    ++steps;
    if (ctx.total_step == 2) {
      task.set_finish();
    }
  });
  task.run(100);
  CHECK(steps == 3);
  CHECK(task.finish());
  CHECK(task.ctx().total_step == 2);  // no renew after the finishing step
}

TEST_CASE("run without middleware returns at once", "[task][middleware]") {
  auto& task = ditask::task();
  auto running = task.start();
  task.run();  // the default max_step is effectively unbounded
  CHECK(task.ctx().total_step == 0);
}

TEST_CASE("run(max_step) runs max_step steps and sets finish on the last one", "[task][middleware][finish]") {
  auto& task = ditask::task();
  auto running = task.start();
  std::vector<std::int64_t> steps;
  std::vector<bool> finish_seen;
  task.use([&task, &steps, &finish_seen](ditask::Context& ctx) {
    steps.push_back(ctx.total_step);
    finish_seen.push_back(task.finish());
  });
  task.run(3);
  CHECK(steps == std::vector<std::int64_t>{0, 1, 2});
  CHECK(finish_seen == std::vector<bool>{false, false, false});
  CHECK(task.finish());
  CHECK(task.ctx().total_step == 2);
}

TEST_CASE("a throwing middleware in sync mode propagates from run and the task stays usable",
          "[task][middleware][errors]") {
  auto& task = ditask::task();
  auto running = task.start();
  int calls = 0;
  task.use([&calls](ditask::Context&) {
    if (++calls == 1) {
      throw std::runtime_error("middleware failed");
    }
  });
  CHECK_THROWS_WITH(task.run(3), "middleware failed");
  CHECK(calls == 1);
  CHECK(task.running());

  CHECK_NOTHROW(task.run(2));
  CHECK(calls == 3);
}

TEST_CASE("an async-mode middleware exception propagates after every forward of the step finished",
          "[task][middleware][async][errors]") {
  auto& task = ditask::task();
  auto running = task.start(async_options());
  std::counting_semaphore<> failed{0};
  std::atomic<bool> other_finished{false};
  task.use([&failed](ditask::Context&) {
    failed.release();
    throw std::runtime_error("first failed");
  });
  task.use([&failed, &other_finished](ditask::Context&) {
    (void)failed.try_acquire_for(10s);  // runs on after the failure
    other_finished = true;
  });
  CHECK_THROWS_WITH(task.run(1), "first failed");
  CHECK(other_finished.load());
}
