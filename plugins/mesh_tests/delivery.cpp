// SPDX-License-Identifier: MIT
// Mesh test module, part 2: delivery guarantees (order, exactly once, large bursts, star with and
// without relay, restarts, exact loss counts, backpressure). Checked by
// tests/integration/mesh_delivery_test.cpp.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mesh_tests.hpp"

using namespace mesh_tests;

namespace {

// Per-sender sequence check: each sender's values should arrive as 0, 1, 2, ...
struct OrderState {
  std::map<std::int64_t, std::int64_t> next;  // sender -> next expected value
  std::int64_t received = 0;
  std::int64_t inversions = 0;  // a value below the next expected one (reordered or duplicated)
  std::int64_t gaps = 0;        // values skipped over (lost, or reordered later)

  void add(std::int64_t from, std::int64_t value) {
    ++received;
    auto& expected = next[from];
    if (value < expected) {
      ++inversions;
      return;
    }
    gaps += value - expected;
    expected = value + 1;
  }
  std::string text() const {
    std::string out = "received=" + std::to_string(received) +
                      " inversions=" + std::to_string(inversions) + " gaps=" + std::to_string(gaps);
    for (const auto& [from, n] : next) {
      out += " next_" + std::to_string(from) + "=" + std::to_string(n);
    }
    return out;
  }
};

// A sender's two signals from the receiver (node 0): "go" once its handlers are registered (so
// a large burst never depends on the bounded hold of early events), "done" once it has all.
struct Phases {
  bool go = false;
  bool done = false;
};

void on_phases(ditask::Task& task, Shared<Phases>& phases) {
  task.on("go", [&phases]() { phases.update([](auto& p) { p.go = true; }); });
  task.on("done", [&phases]() { phases.update([](auto& p) { p.done = true; }); });
}

void wait_go(const Shared<Phases>& phases) {
  phases.wait([](const auto& p) { return p.go; }, "node 0's go");
}

void wait_done(const Shared<Phases>& phases) {
  phases.wait([](const auto& p) { return p.done; }, "node 0's done");
}

}  // namespace

// Ordering: node 0 receives; once it says "go", every other node sends count=N events
// "seq"(sender, i) to node 0.
// `... --main order --parallel-workers 4 -- count=100000`
DITASK_MAIN(order) {
  auto& task = ditask::task();
  const Params params;
  const auto count = params.integer("count", 100000);
  Shared<OrderState> state;
  Shared<Phases> phases;
  auto running = task.start();
  const auto self = node_id();
  if (self != 0) {
    on_phases(task, phases);
    wait_go(phases);
    for (std::int64_t i = 0; i < count; ++i) {
      task.emit_to_node(0, "seq", self, i);
    }
    wait_done(phases);
    result("sent=" + std::to_string(count));
    return;
  }
  const auto senders = peer_ids();
  task.on("seq", [&state](std::int64_t from, std::int64_t value) {
    state.update([&](auto& s) { s.add(from, value); });
  });
  task.emit_remote("go");
  const auto total = count * static_cast<std::int64_t>(senders.size());
  const bool complete =
      state.wait_until([total](const auto& s) { return s.received >= total; }, 90s);
  const auto stats = task.router().stats();
  result(state.get().text() + " frames=" + std::to_string(stats.received) +
         " unhandled=" + std::to_string(stats.unhandled));
  if (!complete) {
    throw std::runtime_error("not every event arrived: " + state.get().text());
  }
  for (auto sender : senders) {
    task.emit_to_node(sender, "done");
  }
}

namespace {

struct MultiState {
  std::vector<std::vector<std::int64_t>> seen = std::vector<std::vector<std::int64_t>>(3);
  std::vector<std::int64_t> once;
};

std::string multi_text(const MultiState& s) {
  std::string out;
  for (std::size_t h = 0; h < s.seen.size(); ++h) {
    const std::set<std::int64_t> distinct(s.seen[h].begin(), s.seen[h].end());
    // Appended piece by piece: GCC 12 -O2 reports a false -Wrestrict in libstdc++'s
    // char_traits for the chain of operator+ this was (GCC bug 105329).
    out.append("h").append(std::to_string(h)).append("=").append(std::to_string(s.seen[h].size()));
    out.append("/").append(std::to_string(distinct.size())).append(" ");
  }
  return out.append("once=").append(joined(s.once));
}

}  // namespace

// Exactly once (2 workers): on node 0's "go", node 1 emits count=N "multi"(i) remote-only; node 0
// has three `on` handlers and one `once` handler for it. Each `on` handler must see every i once.
DITASK_MAIN(exactly_once) {
  auto& task = ditask::task();
  const auto count = Params().integer("count", 1000);
  Shared<MultiState> state;
  Shared<Phases> phases;
  auto running = task.start();
  if (node_id() == 1) {
    on_phases(task, phases);
    wait_go(phases);
    for (std::int64_t i = 0; i < count; ++i) {
      task.emit_remote("multi", i);
    }
    wait_done(phases);
    result("sent=" + std::to_string(task.router().stats().sent));
    return;
  }
  for (std::size_t h = 0; h < 3; ++h) {
    task.on("multi", [&state, h](std::int64_t i) {
      state.update([&](auto& s) { s.seen[h].push_back(i); });
    });
  }
  task.once("multi",
            [&state](std::int64_t i) { state.update([&](auto& s) { s.once.push_back(i); }); });
  task.emit_to_node(1, "go");
  state.wait(
      [count](const auto& s) {
        for (const auto& v : s.seen) {
          if (static_cast<std::int64_t>(v.size()) < count) {
            return false;
          }
        }
        return true;
      },
      "every event in all three handlers");
  task.sync();  // a duplicate queued behind the last event would be counted too
  const auto stats = task.router().stats();
  result(multi_text(state.get()) + " frames=" + std::to_string(stats.received));
  task.emit_to_node(1, "done");
}

// A burst (2 workers): on node 0's "go", node 1 emits count=300 events of size=1 MiB bytes to
// node 0 as fast as emit returns; node 0 checks each one's size, content and order.
DITASK_MAIN(burst) {
  auto& task = ditask::task();
  const Params params;
  const auto count = params.integer("count", 300);
  const auto size = static_cast<std::size_t>(params.integer("size", 1 << 20));
  Shared<BlobTally> state;
  Shared<Phases> phases;
  auto running = task.start();
  if (node_id() == 1) {
    on_phases(task, phases);
    wait_go(phases);
    for (std::int64_t i = 0; i < count; ++i) {
      task.emit_to_node(0, "blob", i, pattern_bytes(i, size));
    }
    wait_done(phases);
    result("sent=" + std::to_string(count));
    return;
  }
  task.on("blob", [&state, size](std::int64_t i, std::vector<std::uint8_t> blob) {
    const bool ok = is_pattern(blob, i, size);
    state.update([&](BlobTally& s) { s.add(i, blob.size(), ok); });
  });
  task.emit_to_node(1, "go");
  state.wait([count](const auto& s) { return s.received >= count; }, "every blob");
  const auto s = state.get();
  result("received=" + std::to_string(s.received) + " bytes=" + std::to_string(s.bytes) +
         " corrupt=" + std::to_string(s.corrupt) + " inversions=" + std::to_string(s.inversions));
  task.emit_to_node(1, "done");
}

// Star (3 workers, --topology star [--relay]): everyone emits "hello_from"(self) remote-only.
// The hub (node 0) waits for both spokes, then emits "hub_done"; a spoke reports whom it had
// heard by hub_done and, with relay=1, also waits for the other spoke's relayed hello.
// sync=1: spokes emit only after the hub's "all_joined" (sent once both spokes joined it), so
// every relay happens between joined peers. late_ms=N: node 2 starts its task N ms late, so
// node 1's hello reaches the hub before node 2 has joined it (a gap, not a synchronisation).
// direct=1 (with relay=1): each spoke also sends the other one "direct_from"(self) with
// emit_to_node, which only the hub can carry, and waits for the other's.
DITASK_MAIN(star) {
  auto& task = ditask::task();
  const Params params;
  const bool relay = params.integer("relay", 0) != 0;
  const bool direct = params.integer("direct", 0) != 0;
  const bool sync = params.integer("sync", 0) != 0;
  const auto late = std::chrono::milliseconds(params.integer("late_ms", 0));
  struct State {
    std::set<std::int64_t> heard;
    std::string at_hub_done;
    std::int64_t spokes_done = 0;
    bool all_joined = false;
    std::set<std::int64_t> direct_from;
  };
  Shared<State> state;
  if (node_id() == 2) {
    std::this_thread::sleep_for(late);
  }
  auto running = task.start();
  const auto self = node_id();
  task.on("hello_from",
          [&state](std::int64_t from) { state.update([&](auto& s) { s.heard.insert(from); }); });
  task.on("hub_done", [&state]() {
    state.update([](auto& s) { s.at_hub_done = "heard_at_hub_done=" + joined(s.heard); });
  });
  task.on("spoke_done", [&state]() { state.update([](auto& s) { ++s.spokes_done; }); });
  task.on("all_joined", [&state]() { state.update([](auto& s) { s.all_joined = true; }); });
  task.on("direct_from",
          [&state](std::int64_t from) { state.update([&](auto& s) { s.direct_from.insert(from); }); });
  if (self == 0) {
    task.emit_remote("all_joined");  // start() returned: both spokes have joined the hub
  } else if (sync) {
    state.wait([](const auto& s) { return s.all_joined; }, "the hub's all_joined");
  }
  task.emit_remote("hello_from", self);
  if (self == 0) {
    state.wait([](const auto& s) { return s.heard.count(1) + s.heard.count(2) == 2; },
               "both spokes' hellos");
    task.emit_remote("hub_done");
    state.wait([](const auto& s) { return s.spokes_done >= 2; }, "both spokes' done");
  } else {
    const std::int64_t other = self == 1 ? 2 : 1;
    if (direct) {
      task.emit_to_node(other, "direct_from", self);
    }
    state.wait(
        [&](const auto& s) {
          return !s.at_hub_done.empty() && (!relay || s.heard.count(other) == 1) &&
                 (!direct || s.direct_from.count(other) == 1);
        },
        relay ? "hub_done and the other spoke's relayed hello" : "hub_done");
    task.emit_to_node(0, "spoke_done");
  }
  const auto s = state.get();
  result("heard=" + joined(s.heard) + (s.at_hub_done.empty() ? "" : " " + s.at_hub_done) +
         (direct ? " direct=" + joined(s.direct_from) : "") + " peers=" + peers_text());
}

// Star with --relay, 3 workers: each spoke sends the hub one event by node id and one by label
// ("node.0"); the hub relays neither (they are for it alone), then broadcasts "hub_done", which
// a spoke receives after anything the hub relayed to it before. Prints "RESULT got=<n>" on the
// hub (4) and "RESULT leaked=<n>" on a spoke (0).
DITASK_MAIN(star_targeted) {
  auto& task = ditask::task();
  struct State {
    int got = 0;
    bool hub_done = false;
  };
  Shared<State> state;  // before the task: its handlers may run until the task stops
  auto running = task.start();
  auto count = [&state] { state.update([](State& s) { ++s.got; }); };
  task.on("to_hub", [count](std::int64_t) { count(); });
  task.on("to_hub_label", [count](std::int64_t) { count(); });
  task.on("hub_done", [&state] { state.update([](State& s) { s.hub_done = true; }); });
  if (node_id() == 0) {
    state.wait([](const State& s) { return s.got == 4; }, "both spokes' two events");
    task.emit_remote("hub_done");
    result("got=" + std::to_string(state.get().got));
    return;
  }
  task.emit_to_node(0, "to_hub", node_id());
  task.emit_to_label("node.0", "to_hub_label", node_id());
  state.wait([](const State& s) { return s.hub_done; }, "the hub's hub_done");
  result("leaked=" + std::to_string(state.get().got));
}

// Star with --relay over two launchers: A runs the hub (node 0, prints "LISTEN <address>") and
// spoke 1; B runs node 2, attached to the hub (--node-ids 2 --attach-to <address>). Node 2 tells
// the hub it joined; the hub tells node 1 to go; node 1 broadcasts "hello", which the hub relays
// to node 2 with node 1 as the sender. Node 2 prints "RESULT sender=<meta.sender>" and tells
// the hub, which then ends (its finish ends node 1).
DITASK_MAIN(relay_across) {
  auto& task = ditask::task();
  struct State {
    bool joined = false, go = false, got = false;
    std::int64_t sender = -1;
  };
  Shared<State> state;  // before the task: its handlers may run until the task stops
  auto running = task.start();
  task.on("attached", [&state] { state.update([](State& s) { s.joined = true; }); });
  task.on("go", [&state] { state.update([](State& s) { s.go = true; }); });
  task.on("hello", [&state](const ditask::EventMeta& meta) {
    state.update([&](State& s) { s.sender = meta.sender; });
  });
  task.on("got", [&state] { state.update([](State& s) { s.got = true; }); });
  if (node_id() == 0) {
    say("LISTEN", listen_address());
    state.wait([](const State& s) { return s.joined; }, "node 2's attached");
    task.emit_to_node(1, "go");
    state.wait([](const State& s) { return s.got; }, "node 2's got");
    result("done");
  } else if (node_id() == 1) {
    state.wait([](const State& s) { return s.go; }, "the hub's go");
    task.emit("hello");
    auto finish = task.waiter(ditask::events::finish);
    finish.wait(std::chrono::minutes(1));
    result("sent");
  } else {
    task.emit_to_node(0, "attached");
    state.wait([](const State& s) { return s.sender >= 0; }, "node 1's hello");
    task.emit_to_node(0, "got");
    result("sender=" + std::to_string(state.get().sender));
  }
}

// SIGKILL under --auto-recover (3 workers): node 1 prints "READY attempt=0 pid=<pid>" and waits
// to be killed; nodes 0 and 2 print "ARMED", wait for node 1 to leave and rejoin (attempt 1),
// then send it "welcome"; attempt 1 waits for both welcomes and thanks both.
DITASK_MAIN(recover_kill) {
  auto& task = ditask::task();
  struct State {
    std::vector<std::string> membership;
    bool rejoined = false;
    bool thanked = false;
    std::set<std::int64_t> welcomes;
  };
  Shared<State> state;
  auto running = task.start();
  const auto self = node_id();
  if (self == 1) {
    task.on("welcome", [&state](std::int64_t from) {
      state.update([&](auto& s) { s.welcomes.insert(from); });
    });
    say("READY", "attempt=" + std::to_string(attempt()) + " pid=" + std::to_string(::getpid()));
    if (attempt() == 0) {
      task.wait_for("mesh_tests.never", 120s);
      throw std::runtime_error("node 1 attempt 0 was not killed");
    }
    state.wait([](const auto& s) { return s.welcomes.size() >= 2; }, "welcomes from nodes 0 and 2");
    task.emit_to_node(0, "thanks");
    task.emit_to_node(2, "thanks");
    result("attempt=1 welcomes=" + joined(state.get().welcomes));
    return;
  }
  watch_node_1(task, state);
  task.on("thanks", [&state]() { state.update([](auto& s) { s.thanked = true; }); });
  say("ARMED", "node=" + std::to_string(self));
  state.wait([](const auto& s) { return s.rejoined; }, "node 1 to rejoin");
  task.emit_to_node(1, "welcome", self);
  state.wait([](const auto& s) { return s.thanked; }, "node 1's thanks");
  result("membership=" + joined(state.get().membership));
}

namespace {

struct SenderState {
  std::int64_t phase1_received = -1;
  std::int64_t usr1 = 0;
  std::string left;
  bool rejoined = false;
  bool end_ack = false;
};

void watch_receiver(ditask::Task& task, Shared<SenderState>& state) {
  task.on(ditask::events::peer_left, [&state](const ditask::Kwargs& kw) {
    if (kw.get<std::int64_t>("node_id") == 1) {
      state.update([&](auto& s) {
        if (s.left.empty()) {
          s.left = membership_text(kw, true);
        }
      });
    }
  });
  task.on(ditask::events::peer_joined, [&state](const ditask::Kwargs& kw) {
    if (kw.get<std::int64_t>("node_id") == 1 && kw.get<std::int64_t>("attempt") >= 1) {
      state.update([](auto& s) { s.rejoined = true; });
    }
  });
  task.on("SIGUSR1", [&state]() { state.update([](auto& s) { ++s.usr1; }); });
  task.on("phase1_received",
          [&state](std::int64_t n) { state.update([&](auto& s) { s.phase1_received = n; }); });
  task.on("end_ack", [&state]() { state.update([](auto& s) { s.end_ack = true; }); });
}

std::string stats_text() {
  const auto s = ditask::task().router().stats();
  return "sent=" + std::to_string(s.sent) + " acked=" + std::to_string(s.acked) +
         " lost=" + std::to_string(s.lost) + " dropped=" + std::to_string(s.dropped);
}

struct ReceiverState {
  std::int64_t received = 0;
  bool end = false;
};

// Node 1 of lost_count and backpressure: counts "data" events, reports the first `phase1` of
// them to node 0 (-1: never), and ends on "end" (attempt 0) or "done" (a restarted attempt).
void data_receiver(ditask::Task& task, Shared<ReceiverState>& state, std::int64_t phase1) {
  task.on("data", [&state, &task, phase1](std::int64_t, const ditask::Kwargs&) {
    std::int64_t n = 0;
    state.update([&](auto& s) { n = ++s.received; });
    if (n == phase1) {
      task.emit_to_node(0, "phase1_received", n);
    }
  });
  task.on("end", [&state]() { state.update([](auto& s) { s.end = true; }); });
  task.on("done", [&state]() { state.update([](auto& s) { s.end = true; }); });
  say("READY", "attempt=" + std::to_string(attempt()) + " pid=" + std::to_string(::getpid()));
  state.wait([](const auto& s) { return s.end; }, "node 0's end", 120s);
  result("attempt=" + std::to_string(attempt()) +
         " received=" + std::to_string(state.get().received));
  task.emit_to_node(0, "end_ack");
}

}  // namespace

// Exact loss count (2 workers, --auto-recover --max-retries 1). Node 0 sends phase1=N "data"
// events, waits until node 1 handled them all and every one is acknowledged, prints
// "PHASE1_DONE pid=<pid>" and waits for SIGUSR1. The test SIGSTOPs node 1, then sends SIGUSR1:
// node 0 sends phase2=M more and prints "PHASE2_SENT"; the test SIGKILLs node 1. Node 0's
// peer_left must report lost=M; node 1 restarts, node 0 sends it "done".
DITASK_MAIN(lost_count) {
  auto& task = ditask::task();
  const Params params;
  const auto phase1 = params.integer("phase1", 100);
  const auto phase2 = params.integer("phase2", 20);
  Shared<SenderState> state;
  Shared<ReceiverState> receiver;
  auto running = task.start();
  if (node_id() == 1) {
    data_receiver(task, receiver, attempt() == 0 ? phase1 : -1);
    return;
  }
  watch_receiver(task, state);
  for (std::int64_t i = 0; i < phase1; ++i) {
    task.emit_to_node(1, "data", i);
  }
  state.wait([](const auto& s) { return s.phase1_received >= 0; }, "node 1's phase 1 report");
  drain();
  say("PHASE1_DONE", "pid=" + std::to_string(::getpid()) + " " + stats_text());
  state.wait([](const auto& s) { return s.usr1 >= 1; }, "SIGUSR1 (node 1 stopped)");
  for (std::int64_t i = 0; i < phase2; ++i) {
    task.emit_to_node(1, "data", phase1 + i);
  }
  say("PHASE2_SENT", std::to_string(phase2));
  state.wait([](const auto& s) { return !s.left.empty(); }, "node 1 to leave");
  const std::string at_leave = stats_text();
  state.wait([](const auto& s) { return s.rejoined; }, "node 1 to rejoin");
  task.emit_to_node(1, "done");
  state.wait([](const auto& s) { return s.end_ack; }, "node 1's end_ack");
  result("phase1_received=" + std::to_string(state.get().phase1_received) + " " + state.get().left +
         " " + at_leave);
}

// Backpressure (2 workers, --send-queue-bytes Q and --send-policy drop, or --send-timeout T).
// Node 0 prints "ARMED pid=<pid>" and waits for SIGUSR1; the test SIGSTOPs node 1 first. Node 0
// then emits count=N events of size=S bytes to node 1, stopping at the first error, and prints
// "BURST_DONE emitted=<k> <stats>" (and "EMIT_ERROR <what>"); the test SIGCONTs node 1. Node 0
// waits until everything queued is acknowledged, sends "end", and node 1 reports what it got.
DITASK_MAIN(backpressure) {
  auto& task = ditask::task();
  const Params params;
  const auto count = params.integer("count", 1000);
  const auto size = static_cast<std::size_t>(params.integer("size", 64 << 10));
  Shared<SenderState> state;
  Shared<ReceiverState> receiver;
  auto running = task.start();
  if (node_id() == 1) {
    data_receiver(task, receiver, -1);
    return;
  }
  watch_receiver(task, state);
  say("ARMED", "pid=" + std::to_string(::getpid()));
  state.wait([](const auto& s) { return s.usr1 >= 1; }, "SIGUSR1 (node 1 stopped)");
  const auto blob = pattern_bytes(0, size);
  std::int64_t emitted = 0;
  for (; emitted < count; ++emitted) {
    try {
      task.emit_to_node(1, "data", emitted, ditask::kw("blob", blob));
    } catch (const std::exception& e) {
      say("EMIT_ERROR", e.what());
      break;
    }
  }
  say("BURST_DONE", "emitted=" + std::to_string(emitted) + " " + stats_text());
  drain();
  task.emit_to_node(1, "end");
  state.wait([](const auto& s) { return s.end_ack; }, "node 1's end_ack");
  result("emitted=" + std::to_string(emitted) + " " + stats_text());
}

// early_hold (2 workers; count=K size=S go=FIFO): node 0 emits K "data" events of S bytes to
// node 1 from a thread of its own while its start() still waits for node 1, which starts its
// task only once it read the test's word from the named pipe FIFO (written after node 0 said
// EMITTING, or EMITTED). The events wait for node 1's first join in node 0's hold queue
// (--send-queue-bytes): with --send-policy drop what does not fit is dropped and counted; with
// wait the emit waits for the join. The same on every transport.
DITASK_MAIN(early_hold) {
  auto& task = ditask::task();
  const Params params;
  const auto count = params.integer("count", 100);
  const auto size = static_cast<std::size_t>(params.integer("size", 64 << 10));
  const std::string go = params.text("go", "");
  if (node_id() == 1) {
    // Blocks until the test opens the pipe, then until it wrote its word (or closed it).
    const int fd = ::open(go.c_str(), O_RDONLY | O_CLOEXEC);
    char word = 0;
    if (fd < 0 || ::read(fd, &word, 1) != 1) {
      throw std::runtime_error("early_hold: no word from the test on " + go);
    }
    ::close(fd);
    Shared<ReceiverState> receiver;
    auto running = task.start();
    data_receiver(task, receiver, -1);
    return;
  }
  Shared<SenderState> state;
  std::int64_t emitted = 0;
  std::string error;
  std::atomic<bool> start_ended{false};
  std::thread emitter([&] {
    const auto blob = pattern_bytes(0, size);
    // The first emit that the transport takes: before start() attached it, emit_to_node
    // refuses, and nothing a module can wait on says when it is attached; so this retries each
    // millisecond, until it is taken or start() ended (it failed, or node 1 joined first).
    bool taken = false;
    while (!taken && !start_ended.load()) {
      try {
        task.emit_to_node(1, "data", std::int64_t{0}, ditask::kw("blob", blob));
        taken = true;
      } catch (const ditask::Error&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (!taken) {
      error = "the transport never took the first emit before start() ended";
      return;
    }
    say("EMITTING", "pid=" + std::to_string(::getpid()));
    for (emitted = 1; emitted < count; ++emitted) {
      try {
        task.emit_to_node(1, "data", emitted, ditask::kw("blob", blob));
      } catch (const std::exception& e) {
        error = e.what();
        break;
      }
    }
    say("EMITTED", "emitted=" + std::to_string(emitted));
  });
  std::optional<ditask::Running> running;
  try {
    running.emplace(task.start());  // returns once node 1 joined
  } catch (...) {
    start_ended = true;
    emitter.join();
    throw;
  }
  start_ended = true;
  watch_receiver(task, state);
  emitter.join();
  if (!error.empty()) {
    say("EMIT_ERROR", error);
  }
  task.emit_to_node(1, "end");
  state.wait([](const auto& s) { return s.end_ack; }, "node 1's end_ack");
  result("emitted=" + std::to_string(emitted) + " " + stats_text());
}
