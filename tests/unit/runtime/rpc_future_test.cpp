// SPDX-License-Identifier: MIT
// Futures (then, wait_all, errors) on states completed here, and the executors served calls run
// on: FIFO per caller with a "last" flag, and a pool that runs jobs at once.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ditask/rpc.hpp"
#include "ditask/rpc_future.hpp"
#include "rpc/executors.hpp"

namespace {

using ditask::Future;
using ditask::RpcError;
using ditask::detail::CallState;
using ditask::detail::Turn;

std::shared_ptr<CallState> state_with(int value) {
  auto s = std::make_shared<CallState>();
  s->complete_local(std::make_shared<int>(value));
  return s;
}

}  // namespace

TEST_CASE("rpc futures: get, then and wait_all on completed states", "[rpc][unit]") {
  Future<int> five(state_with(5));
  CHECK(five.done());
  CHECK(five.get() == 5);
  auto ten = five.then([](const Future<int>& f) { return f.get() * 2; });  // already done: runs here
  CHECK(ten.done());
  CHECK(ten.get() == 10);
  std::vector<Future<int>> all{Future<int>(state_with(1)), Future<int>(state_with(2))};
  CHECK(ditask::wait_all(all) == std::vector<int>{1, 2});
}

TEST_CASE("rpc futures: a continuation runs once the state completes, and errors pass through", "[rpc][unit]") {
  auto pending = std::make_shared<CallState>();
  Future<int> later(pending);
  std::atomic<int> ran{0};
  auto chained = later.then([&](const Future<int>& f) {
    ++ran;
    return f.get() + 1;
  });
  CHECK_FALSE(chained.done());
  CHECK_FALSE(later.wait_for(std::chrono::milliseconds(0)));
  CHECK(ran == 0);
  pending->fail(std::make_exception_ptr(RpcError(RpcError::Kind::node_left, 3, "f", "node 3 left")));
  CHECK(ran == 1);  // completed here: the continuation ran on this thread
  CHECK_THROWS_AS(later.get(), RpcError);
  try {
    chained.get();
    FAIL("no error");
  } catch (const RpcError& e) {
    CHECK(e.kind() == RpcError::Kind::node_left);
    CHECK(e.node() == 3);
    CHECK(std::string(e.what()) == "call 'f' on node 3 failed: node 3 left");
  }
  std::vector<Future<int>> mixed{Future<int>(state_with(1)), later};
  CHECK_THROWS_AS(ditask::wait_all(mixed), RpcError);
}

TEST_CASE("rpc executors: one caller's jobs run in order, told whether another waits behind", "[rpc][unit]") {
  ditask::detail::KeyedQueues queues;
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::vector<int> order;
  std::vector<bool> last;
  // The first job holds the queue until the others are queued behind it.
  REQUIRE(queues.submit(7, [&](Turn t) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return open; });
    order.push_back(0);
    last.push_back(t == Turn::last);
  }));
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(queues.submit(7, [&, i](Turn t) {
      {
        std::lock_guard lock(m);
        order.push_back(i);
        last.push_back(t == Turn::last);
      }
      cv.notify_all();
    }));
  }
  {
    std::unique_lock lock(m);
    open = true;
    cv.notify_all();
    cv.wait(lock, [&] { return order.size() == 4; });  // stop() would refuse what has not begun
  }
  queues.stop();
  CHECK(order == std::vector<int>{0, 1, 2, 3});
  // The first job's flag depends on whether the others were queued when it began; theirs do not.
  REQUIRE(last.size() == 4);
  CHECK(std::vector<bool>(last.begin() + 1, last.end()) == std::vector<bool>{false, false, true});
  CHECK_FALSE(queues.submit(7, [](Turn) {}));
}

TEST_CASE("rpc executors: stop() refuses at once the jobs not begun, while the running one finishes",
          "[rpc][unit]") {
  // Submitted one by one, the two behind the held job wait in the queue; submitted as one batch
  // (before the thread starts), its thread takes all three in one swap, so stop() refuses the two
  // from the batch it took.
  const bool one_batch = GENERATE(false, true);
  INFO("submitted " << (one_batch ? "as one batch" : "one by one"));
  ditask::detail::KeyedQueues queues;
  std::mutex m;
  std::condition_variable cv;
  bool running = false, open = false;
  std::vector<std::string> seen;
  std::vector<ditask::detail::KeyedQueues::Job> jobs;
  jobs.emplace_back([&](Turn) {
    std::unique_lock lock(m);
    running = true;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
    seen.push_back("held ran");
  });
  for (int i = 1; i <= 2; ++i) {
    jobs.emplace_back([&, i](Turn t) {
      {
        std::lock_guard lock(m);
        seen.push_back((t == Turn::refused ? "refused " : "ran ") + std::to_string(i));
      }
      cv.notify_all();
    });
  }
  if (one_batch) {
    REQUIRE(queues.submit(7, jobs));
  } else {
    for (auto& job : jobs) {
      REQUIRE(queues.submit(7, std::move(job)));
    }
  }
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return running; });
  }
  std::thread stopper([&] { queues.stop(); });
  {
    // The two behind the held job are answered while it still holds its thread (the bound only
    // ends a failing run: without the refusal they would wait for the held job).
    std::unique_lock lock(m);
    const bool refused_first = cv.wait_for(lock, std::chrono::seconds(30), [&] { return seen.size() == 2; });
    CHECK(refused_first);
    open = true;
  }
  cv.notify_all();
  stopper.join();
  CHECK(seen == std::vector<std::string>{"refused 1", "refused 2", "held ran"});
}

TEST_CASE("rpc executors: a caller's queue counts as idle once its running job answered and none waits behind",
          "[rpc][unit]") {
  // What lets a define_inline call run on arrival right after the answer of a queued call, while
  // the queue's thread still finishes that job.
  ditask::detail::KeyedQueues queues;
  std::mutex m;
  std::condition_variable cv;
  int step = 0;  // 1: running, not answered; 2: answered; 3: may end
  auto wait_step = [&](int at_least) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return step >= at_least; });
  };
  auto set_step = [&](int to) {
    {
      std::lock_guard lock(m);
      step = to;
    }
    cv.notify_all();
  };
  CHECK(queues.idle(3));  // no queue yet
  REQUIRE(queues.submit(3, [&](Turn) {
    set_step(1);
    wait_step(2);  // the test looks while it runs, not answered
    ditask::detail::KeyedQueues::answered();  // on the job's thread, as a served call does
    set_step(3);
    wait_step(4);  // the test looks while it runs, answered
  }));
  wait_step(1);
  CHECK_FALSE(queues.idle(3));
  set_step(2);
  wait_step(3);
  CHECK(queues.idle(3));
  std::atomic<bool> second_ran{false};
  REQUIRE(queues.submit(3, [&](Turn) { second_ran = true; }));
  CHECK_FALSE(queues.idle(3));  // a job waits behind the answered one
  set_step(4);
  queues.stop();
  CHECK(second_ran.load());
}

TEST_CASE("rpc executors: a batch of one caller's jobs is queued at once, in order, behind what runs",
          "[rpc][unit]") {
  ditask::detail::KeyedQueues queues;
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  std::vector<std::string> order;
  std::vector<bool> last;
  bool queued_c = false;
  auto note = [&](const std::string& name, bool l) {
    {
      std::lock_guard lock(m);
      order.push_back(name);
      last.push_back(l);
    }
    cv.notify_all();
  };
  REQUIRE(queues.submit(7, [&](Turn) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return open; });
  }));
  std::vector<ditask::detail::KeyedQueues::Job> batch;
  // The batch's first job queues one more behind the batch: the batch's last job is then not last.
  batch.emplace_back([&](Turn t) {
    note("a", t == Turn::last);
    queued_c = queues.submit(7, [&](Turn t2) { note("c", t2 == Turn::last); });
  });
  batch.emplace_back([&](Turn t) { note("b", t == Turn::last); });
  REQUIRE(queues.submit(7, batch));
  CHECK(batch.empty());
  {
    std::lock_guard lock(m);
    open = true;
  }
  cv.notify_all();
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return order.size() == 3; });  // stop() would refuse c
  }
  queues.stop();
  CHECK(queued_c);
  CHECK(order == std::vector<std::string>{"a", "b", "c"});
  CHECK(last == std::vector<bool>{false, false, true});
  batch.emplace_back([](Turn) {});
  CHECK_FALSE(queues.submit(7, batch));
  CHECK(batch.empty());
}

TEST_CASE("rpc executors: the pool runs jobs at once, each on a thread of its own when all are busy",
          "[rpc][unit]") {
  ditask::detail::ElasticPool pool(8);
  std::mutex m;
  std::condition_variable cv;
  int inside = 0;
  std::atomic<int> saw_all{0};
  for (int i = 0; i < 4; ++i) {
    REQUIRE(pool.submit([&] {
      std::unique_lock lock(m);
      ++inside;
      cv.notify_all();
      if (cv.wait_for(lock, std::chrono::seconds(30), [&] { return inside >= 4; })) {
        ++saw_all;
      }
    }));
  }
  pool.stop();
  CHECK(saw_all == 4);
  CHECK_FALSE(pool.submit([] {}));
}

namespace {
struct Undefined {};
struct Widget {
  int size = 0;
};
}  // namespace

TEST_CASE("rpc outside a worker: calls fail with stopped, misuse is a clear error", "[rpc][unit]") {
  auto& rpc = ditask::rpc();
  try {
    rpc.call<int>(1, "add", 1, 2);
    FAIL("no error");
  } catch (const RpcError& e) {
    CHECK(e.kind() == RpcError::Kind::stopped);
    // A plain process (this test), task started or not: not a worker, which the message says.
    CHECK(std::string(e.what()) == "call 'add' on node 1 failed: this process is not a ditask worker");
    CHECK(e.hint() == "remote calls travel between the workers of a job: run the module with ditask --package ... "
                      "--parallel-workers N");
  }
  CHECK(rpc.call_async<int>(1, "add", 1, 2).wait_for(std::chrono::milliseconds(0)));  // failed at once
  CHECK_THROWS_WITH(rpc.define("", [] {}), Catch::Contains("needs a name"));
  CHECK_THROWS_WITH(rpc.define_class<Widget>("a widget"), Catch::Contains("without spaces"));
  CHECK_THROWS_WITH(rpc.local_ref(std::make_shared<Undefined>()), Catch::Contains("is not defined for remote calls"));
  rpc.define_class<Widget>("Widget");
  CHECK_THROWS_WITH(rpc.define_class<Widget>("Gadget"), Catch::Contains("already defined as 'Widget'"));
  CHECK_THROWS_WITH(rpc.local_ref(std::make_shared<Widget>()), Catch::Contains("this process is not a ditask worker"));
  // Names starting with "ditask." are the runtime's (ditask.group serves the groups).
  CHECK_THROWS_WITH(rpc.define("ditask.group", [] {}),
                    Catch::Equals("cannot define 'ditask.group': names starting with 'ditask.' are the runtime's"));
  CHECK_THROWS_WITH(rpc.define_concurrent("ditask.mine", [] {}), Catch::Contains("are the runtime's"));
  CHECK_THROWS_WITH(rpc.undefine("ditask.group"),
                    Catch::Equals("cannot undefine 'ditask.group': names starting with 'ditask.' are the runtime's"));
  CHECK_THROWS_WITH(rpc.set_default_timeout(std::chrono::milliseconds(0)), Catch::Contains("must be positive"));
  CHECK(rpc.stats().calls == 0);
  CHECK_FALSE(rpc.undefine("never defined"));
}
