// SPDX-License-Identifier: MIT
// Remote functions: results and errors across processes, many calls in flight, nested calls,
// concurrent functions, timeouts and late replies. Entries of the rpc_tests module; the
// integration tests (tests/integration/rpc_test.cpp) read their RESULT lines.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "rpc_tests.hpp"

using namespace mesh_tests;
using rpc_tests::serve_until_finish;
using ditask::RpcError;

namespace {

// "<kind>|<node>|<function>|<reason>|<hint>" of the RpcError `fn` throws, or "no error".
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const RpcError& e) {
    return std::string(RpcError::kind_name(e.kind())) + "|" + std::to_string(e.node()) + "|" + e.function() + "|" + e.reason() + "|" + e.hint();
  }
  return "no error";
}

}  // namespace

// Node 0 serves; node 1 calls each kind of function and error; prints one line per check as
// "CHECK <name> <value>" and "RESULT done" at the end.
DITASK_MAIN(rpc_basic) {
  auto& rpc = ditask::rpc();
  rpc.define("add", [](std::int64_t a, std::int64_t b) { return a + b; });
  rpc.define("concat", [](const std::string& head, const std::vector<std::uint8_t>& tail) {
    std::vector<std::uint8_t> out(head.begin(), head.end());
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  });
  rpc.define("summary", [](const std::vector<double>& xs) {
    double sum = 0;
    for (double x : xs) {
      sum += x;
    }
    return std::map<std::string, double>{{"n", static_cast<double>(xs.size())}, {"sum", sum}};
  });
  rpc.define("who", [](const ditask::EventMeta& meta) { return std::int64_t{meta.sender}; });
  rpc.define("boom", [](const std::string& why) -> std::int64_t { throw std::runtime_error(why); });
  rpc.define("refuse", []() -> std::int64_t { throw ditask::Error("not now", "try after the warm-up"); });
  std::atomic<int> touched{0};
  rpc.define("touch", [&] { ++touched; });
  rpc.define("scaled", [](std::int64_t x, const ditask::Kwargs& kw) { return x * kw.get_or<std::int64_t>("by", 1); });
  rpc.define("text", [] { return std::string("a string"); });
  // Four calls that each wait until all four are inside at once: only concurrent calls can.
  std::mutex gate_mutex;
  std::condition_variable gate_changed;
  int inside = 0;
  rpc.define_concurrent("gather", [&](std::int64_t want) {
    std::unique_lock lock(gate_mutex);
    ++inside;
    gate_changed.notify_all();
    if (!gate_changed.wait_for(lock, std::chrono::seconds(60), [&] { return inside >= want; })) {
      throw std::runtime_error("only " + std::to_string(inside) + " calls came in at once");
    }
    return std::int64_t{inside};
  });
  const auto before_start = error_of([&] { rpc.call<std::int64_t>(0, "add", 1, 2); });
  auto running = ditask::task().start();
  if (node_id() != 1) {
    serve_until_finish();
    return;
  }
  auto check = [](const std::string& name, const std::string& value) { say("CHECK", name + " " + value); };
  check("before_start", before_start);
  check("refuse", error_of([&] { rpc.call<std::int64_t>(0, "refuse"); }));
  check("within_zero", error_of([&] { rpc.call<std::int64_t>(ditask::Callee(0).within(std::chrono::milliseconds(0)), "add", 1, 2); }));
  check("add", std::to_string(rpc.call<std::int64_t>(0, "add", 2, 3)));
  const auto bytes = rpc.call<std::vector<std::uint8_t>>(0, "concat", std::string("ab"), std::vector<std::uint8_t>{1, 2, 3});
  check("concat", std::to_string(bytes.size()) + ":" + std::to_string(int{bytes[0]}) + "," + std::to_string(int{bytes[4]}));
  const auto sum = rpc.call<std::map<std::string, double>>(0, "summary", std::vector<double>{1.5, 2.5, 4.0});
  check("summary", std::to_string(static_cast<int>(sum.at("n"))) + ":" + std::to_string(static_cast<int>(sum.at("sum"))));
  check("who", std::to_string(rpc.call<std::int64_t>(0, "who")));
  rpc.call(0, "touch");
  check("touch", "ok");
  check("scaled", std::to_string(rpc.call<std::int64_t>(0, "scaled", 7, ditask::kw("by", 6))));
  check("self", std::to_string(rpc.call<std::int64_t>(1, "add", 20, 22)));
  check("by_label", std::to_string(rpc.call<std::int64_t>(ditask::Callee::label("node.0"), "add", 1, 1)));
  check("boom", error_of([&] { rpc.call<std::int64_t>(0, "boom", std::string("it broke")); }));
  check("unknown", error_of([&] { rpc.call<std::int64_t>(0, "ad", 1, 2); }));
  check("bad_arguments", error_of([&] { rpc.call<std::int64_t>(0, "add", std::string("one"), 2); }));
  check("arity", error_of([&] { rpc.call<std::int64_t>(0, "add", 1); }));
  check("bad_result", error_of([&] { rpc.call<std::int64_t>(0, "text"); }));
  check("no_result", error_of([&] { rpc.call<std::int64_t>(0, "touch"); }));
  check("no_label", error_of([&] { rpc.call<std::int64_t>(ditask::Callee::role("nobody"), "add", 1, 1); }));
  // Futures: then, wait_all, polling.
  auto doubled = rpc.call_async<std::int64_t>(0, "add", 10, 11).then([](const ditask::Future<std::int64_t>& f) {
    return f.get() * 2;
  });
  check("then", std::to_string(doubled.get()));
  auto failed_then = rpc.call_async<std::int64_t>(0, "boom", std::string("again")).then(
      [](const ditask::Future<std::int64_t>& f) { return f.get() + 1; });
  check("then_error", error_of([&] { failed_then.get(); }));
  std::vector<ditask::Future<std::int64_t>> all;
  for (int i = 0; i < 4; ++i) {
    all.push_back(rpc.call_async<std::int64_t>(0, "gather", 4));
  }
  std::int64_t total = 0;
  for (auto v : ditask::wait_all(all)) {
    total += v;
  }
  check("gather", std::to_string(total >= 13 ? 4 : 0));
  check("polled", all[0].done() ? "done" : "pending");
  const auto s = rpc.stats();
  check("stats", "calls=" + std::to_string(s.calls) + " answered=" + std::to_string(s.answered) +
                     " failed=" + std::to_string(s.failed) + " served=" + std::to_string(s.served));
  result("done");
}

// Nodes 1..N-1 each make `count` calls to node 0 at once (all in flight), each returning its
// sequence number; node 0 checks that every caller's calls ran in order (FIFO per caller).
// Callers print "RESULT answered=<n> wrong=<w>", node 0 "RESULT served=<n> out_of_order=<k>".
DITASK_MAIN(rpc_many) {
  Params params;
  const auto count = params.integer("count", 3334);
  auto& rpc = ditask::rpc();
  Shared<std::map<std::int64_t, std::int64_t>> next;  // caller -> next expected sequence number
  std::atomic<std::int64_t> out_of_order{0};
  std::atomic<std::int64_t> served{0};
  rpc.define("seq", [&](std::int64_t i, const ditask::EventMeta& meta) {
    next.update([&](auto& m) {
      if (m[meta.sender] != i) {
        ++out_of_order;
      }
      m[meta.sender] = i + 1;
    });
    ++served;
    return i;
  });
  Shared<int> callers_done;
  rpc.define("done", [&] { callers_done.update([](int& n) { ++n; }); });
  auto running = ditask::task().start();
  const auto callers = static_cast<int>(ditask::task().router().peers().size());
  if (node_id() == 0) {
    ditask::task().ready();
    callers_done.wait([&](int n) { return n >= callers; }, "every caller's done", std::chrono::minutes(3));
    result("served=" + std::to_string(served.load()) + " out_of_order=" + std::to_string(out_of_order.load()));
    return;
  }
  rpc_tests::FinishWatch finish;  // node 0 may end as soon as this caller's done is answered
  std::vector<ditask::Future<std::int64_t>> futures;
  futures.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    futures.push_back(rpc.call_async<std::int64_t>(0, "seq", i));
  }
  std::int64_t wrong = 0;
  const auto values = ditask::wait_all(futures);
  for (std::int64_t i = 0; i < count; ++i) {
    wrong += values[static_cast<std::size_t>(i)] != i ? 1 : 0;
  }
  rpc.call(0, "done");
  result("answered=" + std::to_string(values.size()) + " wrong=" + std::to_string(wrong));
  serve_until_finish(finish);
}

// Node 0 calls node 1's play(steps), which calls node 0's act(i) back for every step while
// node 0 waits for play; act itself calls node 1's concurrent leaf (a third level).
// Node 0 prints "RESULT sync=<sum> async=<sum>".
DITASK_MAIN(rpc_nested) {
  auto& rpc = ditask::rpc();
  rpc.define("act", [&](std::int64_t i) { return rpc.call<std::int64_t>(1, "leaf", i) * 2; });
  rpc.define_concurrent("leaf", [](std::int64_t i) { return i + 1; });
  rpc.define("play", [&](std::int64_t steps) {
    std::int64_t sum = 0;
    for (std::int64_t i = 0; i < steps; ++i) {
      sum += rpc.call<std::int64_t>(0, "act", i);
    }
    return sum;
  });
  auto running = ditask::task().start();
  if (node_id() != 0) {
    serve_until_finish();
    return;
  }
  const auto sync = rpc.call<std::int64_t>(1, "play", 100);
  auto later = rpc.call_async<std::int64_t>(1, "play", 50);
  result("sync=" + std::to_string(sync) + " async=" + std::to_string(later.get()));
}

// Node 1's hold() answers only once node 0 released it (an event), long after node 0's call
// of it timed out; a call of it with an hour to wait, begun first, is answered then (a later,
// shorter deadline still wakes the timer): node 0 prints
// "RESULT timeout=<error> late=<n> timed_out=<n> after=<add> long=<hold>".
DITASK_MAIN(rpc_timeout) {
  auto& rpc = ditask::rpc();
  Shared<bool> released;
  rpc.define_concurrent("hold", [&] {
    released.wait([](bool r) { return r; }, "the release", std::chrono::minutes(2));
    return std::int64_t{7};
  });
  rpc.define("add", [](std::int64_t a, std::int64_t b) { return a + b; });
  auto& task = ditask::task();
  auto running = task.start();
  task.on("release", [&] { released.update([](bool& r) { r = true; }); });
  if (node_id() != 0) {
    serve_until_finish();
    return;
  }
  auto long_call = rpc.call_async<std::int64_t>(ditask::Callee(1).within(std::chrono::hours(1)), "hold");
  const auto timeout = error_of([&] { rpc.call<std::int64_t>(ditask::Callee(1).within(std::chrono::milliseconds(100)), "hold"); });
  task.emit_to_node(1, "release");
  const auto held = long_call.get();
  for (int i = 0; i < 6000 && rpc.stats().late_replies == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polls a counter; no margin is assumed
  }
  const auto after = rpc.call<std::int64_t>(1, "add", 2, 3);
  const auto s = rpc.stats();
  result("timeout=" + timeout + " late=" + std::to_string(s.late_replies) + " timed_out=" + std::to_string(s.timed_out) +
         " after=" + std::to_string(after) + " long=" + std::to_string(held));
}

// Run with --auto-recover: node 1's first incarnation dies inside die(); node 0's call fails
// with node_left at once; once the second incarnation joined, calls reach it.
// Node 0 prints "RESULT died=<error> after=<add> attempt=<callee's attempt>".
DITASK_MAIN(rpc_callee_dies) {
  auto& rpc = ditask::rpc();
  rpc.define("die", [] {
    say("DYING", "in die()");
    std::_Exit(3);
  });
  rpc.define("attempt_of", [] { return attempt(); });
  auto& task = ditask::task();
  Shared<bool> rejoined;
  auto running = task.start();
  task.on(ditask::events::peer_joined, [&](const ditask::Kwargs& kw) {
    if (kw.get<std::int64_t>("node_id") == 1 && kw.get<std::int64_t>("attempt") == 1) {
      rejoined.update([](bool& r) { r = true; });
    }
  });
  if (node_id() != 0) {
    serve_until_finish();
    return;
  }
  task.ready();
  const auto died = error_of([&] { rpc.call(1, "die"); });
  rejoined.wait([](bool r) { return r; }, "node 1's restart", std::chrono::minutes(2));
  const auto now = rpc.call<std::int64_t>(1, "attempt_of");
  result("died=" + died + " attempt=" + std::to_string(now));
}

// Node 1 stops its task at once; node 0 calls it after node 1's finish arrived, i.e. while
// node 1 waits for node 0's finish: the call is answered `stopped` at once, not left to
// node_left or its timeout. Node 0 prints "RESULT after_finish=<error>".
DITASK_MAIN(rpc_callee_stopping) {
  auto& rpc = ditask::rpc();
  rpc.define("add", [](std::int64_t a, std::int64_t b) { return a + b; });
  auto& task = ditask::task();
  auto running = task.start();
  if (node_id() != 0) {
    task.ready();
    running.stop();
    return;
  }
  rpc_tests::FinishWatch callee_finished;
  task.ready();
  callee_finished.wait();  // node 1's engine stopped before it sent its finish
  const auto after = error_of([&] { rpc.call<std::int64_t>(ditask::Callee(1).within(std::chrono::minutes(2)), "add", 1, 2); });
  result("after_finish=" + after);
}

// Calls queued behind a running one when the callee stops (2 workers). Node 0 calls node 1's
// "hold" (which runs until node 0 says "release") and then "add" twice, queued behind it (one
// caller's calls run in order), then tells node 1 "sent". Node 1, once "hold" runs and "sent"
// came, stops its task. The queued calls must be answered `stopped` at once, while "hold" still
// runs: node 0 prints "RESULT queued=<error 1>,<error 2> hold_done_first=<yes|no> hold=<value>",
// then releases "hold". (Without the answers, "hold" ends at its 60 s guard and hold_done_first
// is yes.)
DITASK_MAIN(rpc_queued_at_stop) {
  auto& rpc = ditask::rpc();
  auto& task = ditask::task();
  Shared<int> released;  // node 1: "release" came
  Shared<int> progress;  // node 1: bit 0 "hold" runs, bit 1 "sent" came
  rpc.define("hold", [&released, &progress] {
    progress.update([](int& p) { p |= 1; });
    released.wait([](int r) { return r > 0; }, "node 0's release", std::chrono::seconds(60));
    return std::int64_t{1};
  });
  rpc.define("add", [](std::int64_t a, std::int64_t b) { return a + b; });
  auto running = task.start();
  if (node_id() == 1) {
    task.on("release", [&released] { released.update([](int& r) { r = 1; }); });
    task.on("sent", [&progress] { progress.update([](int& p) { p |= 2; }); });
    task.ready();
    progress.wait([](int p) { return p == 3; }, "the held call and node 0's sent", std::chrono::minutes(2));
    running.stop();
    return;
  }
  task.ready();
  const auto callee = ditask::Callee(1).within(std::chrono::minutes(2));
  auto hold = rpc.call_async<std::int64_t>(callee, "hold");
  auto first = rpc.call_async<std::int64_t>(callee, "add", 1, 2);
  auto second = rpc.call_async<std::int64_t>(callee, "add", 3, 4);
  task.emit_to_node(1, "sent");
  const auto one = error_of([&] { first.get(); });
  const auto two = error_of([&] { second.get(); });
  const bool hold_done_first = hold.done();
  task.emit_to_node(1, "release");
  const auto held = error_of([&] { hold.get(); });
  result("queued=" + one + "," + two + " hold_done_first=" + (hold_done_first ? "yes" : "no") +
         " hold=" + (held == "no error" ? std::to_string(hold.get()) : held));
}

// Replies a callee holds to send a batch in one write go out before its function waits (2
// workers). Node 1 runs node 0's calls in order on one thread; when calls are queued behind a
// call whose function ran quickly last time, it holds that call's reply until the batch ends.
// Node 0 calls f0 (which says "running", then runs until node 0's "sent"), and once it runs,
// f1(7) (an echo) and f2(1) (which waits for node 0's "go"), then says "sent": f1 and f2 run
// as one batch, f1's reply held. Node 0 says "go" only once f1's answer came: f2's wait must
// send it first, or the two wait for each other. Node 0 prints "HELD_REPLIES ok f1=7 f2=1",
// or "HELD_REPLIES FAILED ..." and fails when an answer does not come within 30 s.
DITASK_MAIN(rpc_held_replies) {
  auto& rpc = ditask::rpc();
  auto& task = ditask::task();
  std::optional<ditask::Waiter> go;  // node 1: made by f0, waited on by f2 (one caller's calls run in turn)
  rpc.define("f0", [&task, &go] {
    auto sent = task.waiter("sent");  // both before "running": node 0 sends them after it
    go = task.waiter("go");
    task.emit_to_node(0, "running");
    if (!sent.wait(std::chrono::minutes(2))) {
      throw std::runtime_error("no sent from node 0 within 2 minutes");
    }
  });
  rpc.define("f1", [](std::int64_t x) { return x; });
  rpc.define("f2", [&go](std::int64_t mode) {
    // A runtime wait (Waiter::wait), which must first send the replies this thread holds.
    if (mode == 1 && !go->wait(std::chrono::minutes(2))) {
      throw std::runtime_error("no go from node 0 within 2 minutes");
    }
    return mode;
  });
  rpc.define("f3", [] { return std::int64_t{0}; });  // ends the warm-up's batches
  auto running = task.start();
  if (node_id() == 1) {
    serve_until_finish();
    return;
  }
  task.ready();
  const auto callee = ditask::Callee(1).within(std::chrono::minutes(2));
  // The answer of `f`; a FAILED line and an error when it does not come within 30 s.
  auto answer = [&task](const auto& f, const std::string& what) {
    if (!f.wait_for(std::chrono::seconds(30))) {
      say("HELD_REPLIES", "FAILED: no answer of " + what + " within 30 s");
      task.emit_to_node(1, "go");  // a waiting f2 returns, so that node 1 can stop
      throw std::runtime_error("no answer of " + what + " within 30 s");
    }
    return f.get();
  };
  // Calls f0 and returns once it runs, alone in node 1's queue of this node's calls: the calls
  // made next queue behind it and run as one batch once it returns (at "sent"; the calls and
  // the event go over one connection in order, and node 1 queues calls before events reach
  // their waiters). It is the last of its own batch: node 1's thread writes its answer itself,
  // so no write is under way on the link when the next batch's first reply is sent.
  auto begin_batch = [&] {
    auto f0_runs = task.waiter("running");
    auto f0 = rpc.call_async(callee, "f0");
    if (!f0_runs.wait(std::chrono::seconds(30))) {
      say("HELD_REPLIES", "FAILED: f0 did not run within 30 s");
      throw std::runtime_error("f0 did not run within 30 s");
    }
    return f0;
  };
  // The warm-up, so that f1's and f2's last runs were quick ones (a function never run is not
  // known quick): batches of f1 and f2(0), each ended by f3, so that neither is the last of a
  // batch. The first makes them known; in the next ones, their replies are held as below.
  for (int batch = 0; batch < 3; ++batch) {
    auto f0 = begin_batch();
    std::vector<ditask::Future<std::int64_t>> warm;
    for (std::int64_t i = 0; i < 4; ++i) {
      warm.push_back(rpc.call_async<std::int64_t>(callee, "f1", i));
      warm.push_back(rpc.call_async<std::int64_t>(callee, "f2", 0));
    }
    warm.push_back(rpc.call_async<std::int64_t>(callee, "f3"));
    task.emit_to_node(1, "sent");
    answer(f0, "f0");
    for (const auto& f : warm) {
      answer(f, "a warm-up call");
    }
  }
  // The batch of f1 and f2(1): f1 runs with f2 behind it, so its reply is held.
  auto a = begin_batch();
  auto b = rpc.call_async<std::int64_t>(callee, "f1", 7);
  auto c = rpc.call_async<std::int64_t>(callee, "f2", 1);
  task.emit_to_node(1, "sent");
  const auto f1 = answer(b, "f1 (held while f2 waits)");
  task.emit_to_node(1, "go");
  const auto f2 = answer(c, "f2");
  answer(a, "f0");
  say("HELD_REPLIES", "ok f1=" + std::to_string(f1) + " f2=" + std::to_string(f2));
}

// Node 1 serves functions defined with define() and define_inline(); node 0 calls them and
// prints "RESULT ..." with what it saw: one caller's calls of both kinds run in the order made,
// an inline one runs on another thread than the caller's queue, and one that waits fails with
// the runtime's error instead of blocking the thread that receives.
DITASK_MAIN(rpc_inline) {
  auto& rpc = ditask::rpc();
  std::mutex mutex;
  std::vector<std::int64_t> order;  // node 1: the values appended, in the order the calls ran
  std::thread::id queue_thread, inline_thread;
  auto append = [&](std::int64_t i) {
    std::lock_guard lock(mutex);
    order.push_back(i);
    return i;
  };
  rpc.define("append_queued", [&](std::int64_t i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // the inline calls behind it must wait
    return append(i);
  });
  rpc.define_inline("append_inline", [&](std::int64_t i) { return append(i); });
  // Node 0's first call has no queue before it: it runs on arrival, on the receiving thread.
  rpc.define_inline("where_inline", [&] { inline_thread = std::this_thread::get_id(); });
  rpc.define("where_queued", [&] { queue_thread = std::this_thread::get_id(); });
  rpc.define_inline("echo_inline", [](const std::string& s) { return s; });
  rpc.define_inline("inline_waits", [] { ditask::rpc().call(0, "noop"); });
  rpc.define_inline("inline_emits", [] { ditask::task().emit_to_node(0, "from_inline", std::int64_t{5}); });
  rpc.define("noop", [] {});
  rpc.define("report", [&] {
    std::lock_guard lock(mutex);
    bool in_order = order.size() == 400;
    for (std::size_t i = 0; in_order && i < order.size(); ++i) {
      in_order = order[i] == static_cast<std::int64_t>(i);
    }
    return std::string("in_order=") + (in_order ? "1" : "0") +
           " threads_differ=" + (queue_thread != inline_thread && inline_thread != std::thread::id() ? "1" : "0");
  });
  auto running = ditask::task().start();
  if (node_id() == 1) {
    serve_until_finish();
    return;
  }
  auto emitted = ditask::task().waiter("from_inline");
  ditask::task().ready();
  rpc.call(1, "where_inline");
  rpc.call(1, "where_queued");
  std::vector<ditask::Future<std::int64_t>> calls;
  for (std::int64_t i = 0; i < 400; ++i) {  // runs of each kind, so both meet a busy queue
    calls.push_back(rpc.call_async<std::int64_t>(1, (i / 7) % 2 == 0 ? "append_queued" : "append_inline", i));
  }
  std::int64_t sum = 0;
  for (auto& c : calls) {
    sum += c.get();
  }
  std::string out = "sum=" + std::to_string(sum) + " " + rpc.call<std::string>(1, "report");
  out += " echo=" + rpc.call<std::string>(1, "echo_inline", std::string("hi"));
  out += " waits=" + error_of([&] { rpc.call(1, "inline_waits"); });
  rpc.call(1, "inline_emits");
  const auto got = emitted.wait(std::chrono::minutes(1));
  out += " emitted=" + (got ? std::to_string(got->get<std::int64_t>(0)) : std::string("none"));
  result(out);
}
