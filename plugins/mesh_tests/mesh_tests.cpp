// SPDX-License-Identifier: MIT
// Mesh test module, part 1: DI-engine's distributed tests (reference/diengine.md §6) made
// deterministic. Every entry prints "RESULT key=value ..." lines that
// tests/integration/mesh_test.cpp checks; waits are on conditions, each bounded so a lost event
// fails the entry instead of hanging.
//
// State shared with handlers is declared before `task.start()`: the Running guard stops the task
// (and runs the queued handlers) when it goes out of scope, so that state must outlive it.
#include "mesh_tests.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace mesh_tests;

// test_parallel_run: every worker emits "ping" remotely once and waits for the ping of every peer.
// `ditask --package mesh_tests --main ping --parallel-workers 3 [--protocol ipc]`
DITASK_MAIN(ping) {
  auto& task = ditask::task();
  Shared<std::set<std::int64_t>> from;
  auto running = task.start();
  const auto peers = peer_ids();
  task.on("test_callback", [&from](std::string key, const ditask::Kwargs& kw) {
    if (key == "ping") {
      from.update([&](auto& s) { s.insert(kw.get<std::int64_t>("from")); });
    }
  });
  task.emit_remote("test_callback", std::string("ping"), ditask::kw("from", node_id()));
  from.wait([&](const auto& s) { return contains_all(s, peers); }, "a ping from every peer");
  result("peers=" + joined(peers) + " pings_from=" + joined(from.get()));
}

// test_uncaught_exception: node 0 throws once the mesh is up; the others wait to be stopped.
DITASK_MAIN(uncaught) {
  auto& task = ditask::task();
  auto running = task.start();
  if (node_id() == 0) {
    throw std::runtime_error("uncaught exception");
  }
  if (!task.wait_for("mesh_tests.never", 120s)) {
    throw std::runtime_error("node " + std::to_string(node_id()) + " was not stopped");
  }
}

// test_disconnected: node 0 returns after its first greeting (its stop() broadcasts finish);
// node 1 then emits 10 more greetings, 0.1 s apart, to a peer that has stopped, and must not fail.
// (An orderly stop waits for the peers' own finish before leaving, so "stopped" is as far as
// node 0 gets while node 1 still runs; peers that really vanish are the SIGKILL tests' part.)
DITASK_MAIN(disconnect) {
  auto& task = ditask::task();
  Shared<std::int64_t> greetings;
  Shared<std::string> finished;
  auto running = task.start();
  if (node_id() == 0) {
    task.on("greeting", [&greetings](std::string) { greetings.update([](auto& n) { ++n; }); });
    greetings.wait([](auto n) { return n >= 1; }, "a greeting");
    result("got_greeting=1");
    return;
  }
  task.on(ditask::events::finish, [&finished](const ditask::EventArgs& a) {
    const auto kw = a.named();
    if (kw.get<std::int64_t>("node_id") == 0) {
      finished.update([&](auto& s) { s = kw.get<std::string>("reason"); });
    }
  });
  task.emit("greeting", std::string("Hi"));
  finished.wait([](const auto& s) { return !s.empty(); }, "node 0's finish");
  int errors = 0;
  for (int i = 0; i < 10; ++i) {
    try {
      task.emit("greeting", std::string("Hi"));
    } catch (const std::exception& e) {
      ++errors;
      say("EMIT_ERROR", e.what());
    }
    std::this_thread::sleep_for(100ms);  // DI-engine's pace: emits spread over a second
  }
  result("emitted=10 errors=" + std::to_string(errors) + " node_0_finished=" + finished.get());
}

namespace {

struct RecoverState {
  std::int64_t recovered = 0;
  std::int64_t armed = 0;
  bool greeting_1 = false;
  std::vector<std::string> membership;  // node 1's leaves and joins, in order
  bool rejoined = false;
};

void recover_node_1(ditask::Task& task, Shared<RecoverState>& state) {
  if (attempt() == 0) {
    task.on("armed", [&state](std::int64_t) { state.update([](auto& s) { ++s.armed; }); });
    state.wait([](const auto& s) { return s.armed >= 2; }, "nodes 0 and 2 to be armed");
    for (int i = 0; i < 10; ++i) {
      task.emit_to_node(0, "greeting_0", std::string());
    }
    throw std::runtime_error("P1 Error");
  }
  task.on("greeting_1",
          [&state](std::string) { state.update([](auto& s) { s.greeting_1 = true; }); });
  for (int i = 0; i < 10; ++i) {
    task.emit_to_node(0, "greeting_0", std::string("recovered_p1"));
  }
  state.wait([](const auto& s) { return s.greeting_1; }, "greeting_1 from node 2");
  result("attempt=" + std::to_string(attempt()) + " greeting_1=1");
}

}  // namespace

// test_auto_recover (3 workers, --auto-recover): node 1 fails its first attempt with "P1 Error"
// once nodes 0 and 2 are armed; attempt 1 sends "recovered_p1" x10 to node 0 and waits for
// node 2's greeting_1, which node 2 sends when it sees node 1 rejoin.
DITASK_MAIN(recover) {
  auto& task = ditask::task();
  Shared<RecoverState> state;
  auto running = task.start();
  const auto self = node_id();
  if (self == 1) {
    recover_node_1(task, state);
    return;
  }
  watch_node_1(task, state);
  if (self == 0) {
    task.on("greeting_0", [&state](std::string payload) {
      if (payload == "recovered_p1") {
        state.update([](auto& s) { ++s.recovered; });
      }
    });
  }
  task.emit_to_node(1, "armed", self);
  if (self == 0) {
    state.wait([](const auto& s) { return s.recovered >= 10 && s.rejoined; },
               "10 recovered_p1 greetings and node 1's rejoin");
  } else {
    state.wait([](const auto& s) { return s.rejoined; }, "node 1 to rejoin");
    task.emit_to_node(1, "greeting_1", std::string("from node 2"));
  }
  const auto s = state.get();
  result("recovered=" + std::to_string(s.recovered) + " membership=" + joined(s.membership));
}

// test_parallel_pipeline: a middleware emits "count" remotely each step; run(10); then each
// worker waits for the 10 counts of every peer.
DITASK_MAIN(pipeline) {
  auto& task = ditask::task();
  Shared<std::map<std::int64_t, std::vector<std::int64_t>>> counts;
  std::int64_t steps = 0;
  auto running = task.start();
  const auto self = node_id();
  const auto peers = peer_ids();
  task.on("count", [&counts](std::int64_t from, std::int64_t step) {
    counts.update([&](auto& c) { c[from].push_back(step); });
  });
  task.use([&task, &steps, self](ditask::Context&) {
    task.emit_remote("count", self, steps);
    ++steps;
  });
  task.run(10);
  counts.wait(
      [&](const auto& c) {
        for (auto peer : peers) {
          auto it = c.find(peer);
          if (it == c.end() || it->second.size() < 10) {
            return false;
          }
        }
        return true;
      },
      "10 counts from every peer");
  std::string text = "steps=" + std::to_string(steps);
  for (const auto& [from, list] : counts.get()) {
    text += " from_" + std::to_string(from) + "=" + joined(list);
  }
  result(text);
}

namespace {

struct ScopeState {
  std::int64_t greetings = 0;
  std::int64_t only_local = 0;
  std::int64_t both = 0;
  bool marker = false;
  std::string at_marker;
  std::int64_t got = -1;
};

void count_scopes(ditask::Task& task, Shared<ScopeState>& state) {
  task.on("Greeting", [&state](std::int64_t) { state.update([](auto& s) { ++s.greetings; }); });
  task.on("only_local", [&state]() { state.update([](auto& s) { ++s.only_local; }); });
  task.on("both", [&state]() { state.update([](auto& s) { ++s.both; }); });
  task.on("marker", [&state]() {
    state.update([](auto& s) {
      s.marker = true;
      s.at_marker = "greetings=" + std::to_string(s.greetings) +
                    " only_local=" + std::to_string(s.only_local) +
                    " both=" + std::to_string(s.both);
    });
  });
}

}  // namespace

// test_emit_remote and the three scopes (2 workers). Node 1 emits only_local, both (local and
// remote), 20 Greeting remote-only, then a marker; node 0 reports what had arrived by the marker
// (one sender's events arrive in order). Node 1 must have seen none of its own remote emits.
DITASK_MAIN(scopes) {
  auto& task = ditask::task();
  Shared<ScopeState> state;
  auto running = task.start();
  count_scopes(task, state);
  if (node_id() == 0) {
    state.wait([](const auto& s) { return s.marker; }, "the marker");
    task.emit_to_node(1, "got", state.get().greetings);
    result(state.get().at_marker);
    return;
  }
  task.on("got", [&state](std::int64_t n) { state.update([&](auto& s) { s.got = n; }); });
  task.emit_local("only_local");
  task.emit("both");
  for (std::int64_t i = 0; i < 20; ++i) {
    task.emit_remote("Greeting", i);
  }
  task.emit_remote("marker");
  state.wait([](const auto& s) { return s.got >= 0; }, "node 0's reply");
  task.sync();
  const auto s = state.get();
  const auto stats = task.router().stats();
  result("self_greetings=" + std::to_string(s.greetings) +
         " only_local=" + std::to_string(s.only_local) + " both=" + std::to_string(s.both) +
         " peer_got=" + std::to_string(s.got) + " sent=" + std::to_string(stats.sent) +
         " peers=" + peers_text());
}

// A node dialling its own address (--topology alone --attach-to <own address>) receives its
// own remote-only emits, in order.
DITASK_MAIN(self_dial) {
  auto& task = ditask::task();
  Shared<std::vector<std::int64_t>> got;
  auto running = task.start();
  task.on("self_ping", [&got](std::int64_t i) { got.update([&](auto& v) { v.push_back(i); }); });
  for (std::int64_t i = 0; i < 5; ++i) {
    task.emit_remote("self_ping", i);
  }
  got.wait([](const auto& v) { return v.size() >= 5; }, "5 of its own pings");
  result("self_received=" + joined(got.get()) + " peers=" + peers_text());
}

namespace {

// Records the first "finish" event as "finish_from=<id> reason=<r> arg=<true|false>".
void record_finish(ditask::Task& task, Shared<std::string>& finish) {
  task.on(ditask::events::finish, [&finish](const ditask::EventArgs& a) {
    const auto kw = a.named();
    const std::string text = "finish_from=" + std::to_string(kw.get<std::int64_t>("node_id")) +
                             " reason=" + kw.get<std::string>("reason") +
                             " arg=" + (a.get<bool>(0) ? "true" : "false");
    finish.update([&](auto& s) {
      if (s.empty()) {
        s = text;
      }
    });
  });
}

// run() until a peer's finish ends it; steps paced so the loop does not burn a shared CPU.
void run_until_finish(ditask::Task& task, Shared<std::string>& finish) {
  task.use([](ditask::Context&) { std::this_thread::sleep_for(2ms); });
  task.run();
  finish.wait([](const auto& s) { return !s.empty(); }, "the finish event");
}

}  // namespace

// test_early_stop (2 workers): node 0 runs without a step limit and tells node 1 once it runs;
// node 1 runs 2 steps and returns, so its stop() broadcasts finish and node 0's run() ends.
DITASK_MAIN(early_stop) {
  auto& task = ditask::task();
  Shared<std::string> finish;
  Shared<bool> started;
  std::int64_t steps = 0;
  auto running = task.start();
  if (node_id() == 0) {
    record_finish(task, finish);
    task.use([&task, &steps](ditask::Context&) {
      if (steps++ == 0) {
        task.emit_to_node(1, "started");
      }
    });
    run_until_finish(task, finish);
    result("run_ended=1 " + finish.get());
    return;
  }
  task.on("started", [&started]() { started.update([](auto& b) { b = true; }); });
  started.wait([](auto b) { return b; }, "node 0 to run");
  task.use([&steps](ditask::Context&) { ++steps; });
  task.run(2);
  result("ran=" + std::to_string(steps));
}

// test_broadcast_finish over two launchers: A runs node 0 (prints "LISTEN <address>"), B runs
// nodes 1 and 2 with --topology alone --attach-to A. Node 1 runs 2 steps and leaves; its finish
// ends node 0's run(), and node 0's own finish then ends node 2's.
DITASK_MAIN(finish_chain) {
  auto& task = ditask::task();
  Shared<std::string> finish;
  Shared<std::set<std::int64_t>> joined_ids;
  auto running = task.start();
  record_finish(task, finish);
  const auto self = node_id();
  if (self == 1) {
    std::int64_t steps = 0;
    task.use([&steps](ditask::Context&) { ++steps; });
    task.run(2);
    result("node=1 ran=" + std::to_string(steps));
    return;
  }
  if (self == 0) {
    task.on(ditask::events::peer_joined, [&joined_ids](const ditask::Kwargs& kw) {
      joined_ids.update([&](auto& s) { s.insert(kw.get<std::int64_t>("node_id")); });
    });
    say("LISTEN", listen_address());
    joined_ids.wait([](const auto& s) { return s.count(1) == 1 && s.count(2) == 1; },
                    "nodes 1 and 2 to join");
  }
  run_until_finish(task, finish);
  result("node=" + std::to_string(self) + " " + finish.get());
}

namespace {

struct TargetState {
  std::int64_t direct = 0;
  std::int64_t labelled = 0;
  std::int64_t all_peers = 0;
  std::int64_t nobody = 0;
  bool kwargs_ok = false;
  bool marker = false;
  std::string at_marker;
};

void count_targets(ditask::Task& task, Shared<TargetState>& state) {
  task.on("direct", [&state](std::int64_t value, const ditask::Kwargs& kw) {
    const bool ok = value == 7 && kw.get<std::string>("text") == "hi" &&
                    kw.get<double>("value") == 2.5 && kw.size() == 2;
    state.update([&](auto& s) {
      ++s.direct;
      s.kwargs_ok = ok;
    });
  });
  task.on("labelled", [&state](std::int64_t) { state.update([](auto& s) { ++s.labelled; }); });
  task.on("all_peers", [&state](std::int64_t) { state.update([](auto& s) { ++s.all_peers; }); });
  task.on("nobody", [&state](std::int64_t) { state.update([](auto& s) { ++s.nobody; }); });
  task.on("marker", [&state]() {
    state.update([](auto& s) {
      s.marker = true;
      s.at_marker = "direct=" + std::to_string(s.direct) +
                    " kwargs_ok=" + std::to_string(s.kwargs_ok ? 1 : 0) +
                    " labelled=" + std::to_string(s.labelled) +
                    " all_peers=" + std::to_string(s.all_peers) +
                    " nobody=" + std::to_string(s.nobody);
    });
  });
}

}  // namespace

// emit_to_node, emit_to_label and named arguments (3 workers): node 0 sends "direct" (with
// kwargs) to node 1, "labelled" to label node.2, "all_peers" to node.*, "nobody" to a label
// nobody has, then a marker; nodes 1 and 2 report what had arrived by the marker. Every node
// also prints "LISTEN <address>" and "PEERS <peers_detail()>".
DITASK_MAIN(targets) {
  auto& task = ditask::task();
  Shared<TargetState> state;
  Shared<std::int64_t> acks;
  auto running = task.start();
  say("LISTEN", listen_address());
  say("PEERS", peers_detail());
  if (node_id() == 0) {
    task.on("ack", [&acks]() { acks.update([](auto& n) { ++n; }); });
    task.emit_to_node(1, "direct", std::int64_t{7}, ditask::kw("text", std::string("hi")),
                      ditask::kw("value", 2.5));
    task.emit_to_label("node.2", "labelled", std::int64_t{2});
    task.emit_to_label("node.*", "all_peers", std::int64_t{0});
    task.emit_to_label("nomatch.*", "nobody", std::int64_t{0});
    task.emit_remote("marker");
    acks.wait([](auto n) { return n >= 2; }, "acks from nodes 1 and 2");
    result("acks=2");
    return;
  }
  count_targets(task, state);
  state.wait([](const auto& s) { return s.marker; }, "node 0's marker");
  task.emit_to_node(0, "ack");
  result(state.get().at_marker);
}
