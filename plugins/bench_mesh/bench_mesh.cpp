// SPDX-License-Identifier: MIT
// The ditask side of `scripts/bench.sh mesh` (tests/bench/raw_mesh_bench.cpp is the raw Asio side).
// Node 0 drives the measurements between workers and prints one line `bench_mesh <figure>
// key=value ...`, which the launcher tags `[node 0]` (ready and idle_rss: every node prints its
// own); the script parses them. Parameters come after `--` as key=value:
//
//   rtt       2 workers. Node 0 sends `rounds` (20000) 64-byte "ping"s to node 1 after `warmup`
//             (2000), one at a time; node 1's handler emits each back as "pong". Prints p50/p99 in
//             microseconds and the context switches of both processes per round trip.
//             `inline=1`: both handlers registered with on_inline (they run on the io threads).
//   stream    N workers. Node 0 emits `count` (1000000) events of `size` (64) bytes with
//             emit_remote; every other node counts them in its handler. Prints events/s and GB/s
//             from the first emit until the last event reached its last receiver, and delivered.
//   ready     Returns right after start(): prints when this worker's mesh was ready.
//   idle_rss  Prints this worker's VmRSS right after start().
//   scale     N workers, any topology. Node 0 waits until every peer answered, then has the
//             highest node broadcast `waves` (1) numbered "bm.wave" events; every node prints when
//             start() returned, when the first reached it, how many did (`waves`; its sender 0) and
//             how many out of order, the transport's lost and dropped counts, its VmRSS and its
//             open descriptors (scripts/bench.sh scale, and a test at 128 workers). In a job
//             of several launchers node 0 first waits until all WORLD_SIZE - 1 others joined it
//             (tests/netns/netns_test.sh: 4 hosts x 64 workers over one star).
//
// Every wait gives up after `timeout_s` (120) seconds with an exception, which fails the worker.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <span>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <utility>
#include <vector>

#include <ditask/ditask.hpp>

#include "bench_measure.hpp"

namespace {

using ditask::bench::context_switches;
using ditask::bench::Switches;
using ditask::bench::switches_fields;
using ditask::bench::micros;
using ditask::bench::now_ns;
using ditask::bench::vmrss_kb;

using Clock = std::chrono::steady_clock;


// The module arguments as key=value integers over `defaults` (and timeout_s, 120). Errors:
// ditask::Error for an unknown key or a value that is not an integer.
class Params {
 public:
  Params(std::initializer_list<std::pair<const char*, std::int64_t>> defaults) {
    std::map<std::string, std::int64_t> all{{"timeout_s", 120}};
    for (const auto& [name, value] : defaults) {
      all[name] = value;
    }
    values_ = ditask::ModuleArgs::integers(std::move(all));
  }
  std::int64_t operator[](const std::string& name) const { return values_.at(name); }
  std::chrono::seconds timeout() const { return std::chrono::seconds(values_.at("timeout_s")); }

 private:
  std::map<std::string, std::int64_t> values_;
};

// A flag one thread sets and another waits for.
class Signal {
 public:
  void set() {
    const std::lock_guard lock(mutex_);
    set_ = true;
    cv_.notify_all();
  }
  // True when set() came within `limit`.
  bool wait_for(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [this] { return set_; });
  }
  // Waits until set(). Errors: std::runtime_error naming `what` after `limit`.
  void wait(std::chrono::seconds limit, const std::string& what) {
    if (!wait_for(limit)) {
      throw std::runtime_error("bench_mesh: timed out after " + std::to_string(limit.count()) +
                               " s waiting for " + what);
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool set_ = false;
};

void print_line(const std::string& line) {
  std::printf("bench_mesh %s\n", line.c_str());
  std::fflush(stdout);
}

std::int64_t self_id() { return ditask::task().router().node_id(); }

std::int64_t peer_count() {
  return static_cast<std::int64_t>(ditask::task().router().peers().size());
}

// Node 0: sends "bm.probe" to every peer until all of them answered "bm.ready", so no measured
// event can arrive before its handler is registered. Receivers call answer_probes() first.
void await_receivers(const Params& params) {
  auto& task = ditask::task();
  // Shared with the handler: a late answer may still be queued when this function returns.
  struct Answers {
    std::mutex mutex;
    std::set<std::int64_t> nodes;
    std::size_t expected = 0;
    Signal all;
  };
  auto answers = std::make_shared<Answers>();
  answers->expected = static_cast<std::size_t>(peer_count());
  task.ready();  // node 0's handlers are registered before it measures anything
  task.on("bm.ready", [answers](std::int64_t node) {
    const std::lock_guard lock(answers->mutex);
    if (answers->nodes.insert(node).second && answers->nodes.size() == answers->expected) {
      answers->all.set();
    }
  });
  const auto deadline = Clock::now() + params.timeout();
  do {
    if (Clock::now() > deadline) {
      throw std::runtime_error("bench_mesh: peers did not answer bm.probe within " +
                               std::to_string(params.timeout().count()) + " s");
    }
    task.emit_remote("bm.probe");
  } while (!answers->all.wait_for(std::chrono::milliseconds(20)));
  task.off("bm.ready");
}

// Receivers: answers node 0's probes (after the caller registered its measured handlers).
void answer_probes() {
  auto& task = ditask::task();
  task.on("bm.probe", [&task] { task.emit_to_node(0, "bm.ready", self_id()); });
  task.ready();  // every handler is registered: measured events are not kept for later ones
}

// Everyone but node 0: stays until node 0 has all it needs, so no worker leaves the mesh while a
// measurement is still running.
void await_bye(ditask::Waiter& bye, const Params& params) {
  if (!bye.wait(params.timeout())) {
    throw std::runtime_error("bench_mesh: no bm.bye from node 0 within " +
                             std::to_string(params.timeout().count()) + " s");
  }
}

// Node 0's side of rtt: the pong handler sends the next ping, so no thread hand-off other than
// the mesh's own sits in the loop.
class Pinger {
 public:
  explicit Pinger(const Params& params)
      : warmup_(params["warmup"]),
        total_(params["warmup"] + params["rounds"]),
        blob_(static_cast<std::size_t>(params["size"]), 0x5a),
        inline_(params["inline"] != 0) {
    latencies_ns_.reserve(static_cast<std::size_t>(params["rounds"]));
  }

  // Registers the pong handler and sends the first ping. Thread: the entry's.
  void start() {
    auto pong = [this](std::vector<std::uint8_t> blob) { on_pong(std::move(blob)); };
    if (inline_) {
      ditask::task().on_inline("bm.pong", pong);
    } else {
      ditask::task().on("bm.pong", pong);
    }
    send(std::vector<std::uint8_t>(blob_));
  }
  Signal& finished() { return finished_; }
  Switches context_switches_in_window() const { return ctx_end_ - ctx_start_; }
  std::vector<std::int64_t> sorted_latencies() const {
    auto sorted = latencies_ns_;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

 private:
  void on_pong(std::vector<std::uint8_t> blob) {
    const auto arrived = now_ns();
    ++done_;
    if (done_ > warmup_) {
      latencies_ns_.push_back(arrived - sent_ns_);
    }
    if (done_ == total_) {
      ctx_end_ = context_switches();
      finished_.set();
      return;
    }
    send(std::move(blob));
  }
  void send(std::vector<std::uint8_t> blob) {
    if (done_ == warmup_) {
      ctx_start_ = context_switches();
    }
    sent_ns_ = now_ns();
    ditask::task().emit_to_node(1, "bm.ping", std::move(blob));
  }

  std::int64_t warmup_;
  std::int64_t total_;
  std::vector<std::uint8_t> blob_;
  bool inline_;  // the pong handler registered with on_inline
  std::vector<std::int64_t> latencies_ns_;
  std::int64_t done_ = 0;
  std::int64_t sent_ns_ = 0;
  Switches ctx_start_;
  Switches ctx_end_;
  Signal finished_;
};


void rtt_node0(const Params& params) {
  auto& task = ditask::task();
  Pinger pinger(params);
  auto stats = task.waiter("bm.stats");
  await_receivers(params);
  pinger.start();
  pinger.finished().wait(params.timeout(), "the last pong");
  task.emit_to_node(1, "bm.done");
  const auto peer_stats = stats.wait(params.timeout());
  if (!peer_stats) {
    throw std::runtime_error("bench_mesh: no bm.stats from node 1");
  }
  task.emit_remote("bm.bye");
  const auto sorted = pinger.sorted_latencies();
  const auto n = sorted.size();
  const Switches peer{peer_stats->get<std::int64_t>(0), peer_stats->get<std::int64_t>(1)};
  print_line("rtt rounds=" + std::to_string(n) + " p50_us=" + micros(sorted[n / 2]) +
             " p99_us=" + micros(sorted[n * 99 / 100]) + " max_us=" + micros(sorted.back()) + " " +
             switches_fields(pinger.context_switches_in_window(), peer, params["rounds"]));
}

void rtt_node1(const Params& params) {
  auto& task = ditask::task();
  const auto warmup = params["warmup"];
  std::int64_t pings = 0;
  Switches ctx_start = context_switches();
  auto done = task.waiter("bm.done");
  auto bye = task.waiter("bm.bye");
  auto ping = [&](std::vector<std::uint8_t> blob) {
    if (++pings == warmup) {
      ctx_start = context_switches();
    }
    task.emit_to_node(0, "bm.pong", std::move(blob));
  };
  if (params["inline"] != 0) {
    task.on_inline("bm.ping", ping);
  } else {
    task.on("bm.ping", ping);
  }
  answer_probes();
  if (!done.wait(params.timeout())) {
    throw std::runtime_error("bench_mesh: no bm.done from node 0");
  }
  const Switches window = context_switches() - ctx_start;
  task.emit_to_node(0, "bm.stats", window.all, window.involuntary);
  await_bye(bye, params);
}

// What one receiver of `stream` counted.
struct Received {
  std::int64_t events = 0;
  std::int64_t bytes = 0;
  std::int64_t last_ns = 0;
};

void stream_sender(const Params& params) {
  auto& task = ditask::task();
  const auto receivers = peer_count();
  std::mutex mutex;
  std::vector<Received> reports;
  Signal all_reported;
  task.on("bm.report", [&](std::int64_t events, std::int64_t bytes, std::int64_t last_ns) {
    const std::lock_guard lock(mutex);
    reports.push_back({events, bytes, last_ns});
    if (static_cast<std::int64_t>(reports.size()) == receivers) {
      all_reported.set();
    }
  });
  await_receivers(params);
  const auto count = params["count"];
  const std::vector<std::uint8_t> blob(static_cast<std::size_t>(params["size"]), 0x5a);
  const auto start = now_ns();
  for (std::int64_t i = 0; i < count; ++i) {
    task.emit_remote("bm.data", blob);
  }
  const auto emitted = now_ns();
  // Same connection, so after every data event: each receiver reports once it has seen it.
  task.emit_remote("bm.end");
  all_reported.wait(params.timeout(), "the reports of " + std::to_string(receivers) + " receivers");
  task.emit_remote("bm.bye");
  const std::lock_guard lock(mutex);
  Received total;
  for (const auto& r : reports) {
    total.events += r.events;
    total.bytes += r.bytes;
    total.last_ns = std::max(total.last_ns, r.last_ns);
  }
  const double seconds = static_cast<double>(total.last_ns - start) / 1e9;
  char figures[256];
  std::snprintf(figures, sizeof figures,
                "seconds=%.4f emit_seconds=%.4f events_per_s=%.0f gb_per_s=%.4f delivered_pct=%.3f",
                seconds, static_cast<double>(emitted - start) / 1e9,
                static_cast<double>(count) / seconds,
                static_cast<double>(total.bytes) / static_cast<double>(receivers) / seconds / 1e9,
                100.0 * static_cast<double>(total.events) / static_cast<double>(count * receivers));
  print_line("stream receivers=" + std::to_string(receivers) + " count=" + std::to_string(count) +
             " size=" + std::to_string(params["size"]) +
             " delivered=" + std::to_string(total.events) +
             " expected=" + std::to_string(count * receivers) + " " + figures);
}

void stream_receiver(const Params& params) {
  auto& task = ditask::task();
  Received received;
  auto bye = task.waiter("bm.bye");
  // A view of the event's bytes (no copy into a vector of the handler's own), as a user who
  // receives large payloads and only reads them would write it.
  task.on("bm.data", [&](std::span<const std::uint8_t> blob) {
    ++received.events;
    received.bytes += static_cast<std::int64_t>(blob.size());
  });
  // bm.end follows the last bm.data on the same link and runs right after it: the clock is read
  // once here, as the baselines read it once after their last message (a read per event cost the
  // receiver a third of its dispatcher's time).
  task.on("bm.end", [&] {
    received.last_ns = now_ns();
    task.emit_to_node(0, "bm.report", received.events, received.bytes, received.last_ns);
  });
  answer_probes();
  await_bye(bye, params);
}
}  // namespace

// `ditask --package bench_mesh --main rtt --parallel-workers 2 -- rounds=20000 warmup=2000`
DITASK_MAIN(rtt) {
  const Params params{{"rounds", 20000}, {"warmup", 2000}, {"size", 64}, {"inline", 0}};
  if (params["rounds"] < 1 || params["warmup"] < 0) {
    throw std::invalid_argument("bench_mesh: rtt needs rounds >= 1 and warmup >= 0");
  }
  auto running = ditask::task().start();
  if (peer_count() != 1) {
    throw std::runtime_error("bench_mesh: rtt needs exactly 2 workers");
  }
  if (self_id() == 0) {
    rtt_node0(params);
  } else {
    rtt_node1(params);
  }
}

// `ditask --package bench_mesh --main stream --parallel-workers N -- count=1000000 size=64`
DITASK_MAIN(stream) {
  const Params params{{"count", 1000000}, {"size", 64}};
  if (params["count"] < 1 || params["size"] < 0) {
    throw std::invalid_argument("bench_mesh: stream needs count >= 1 and size >= 0");
  }
  auto running = ditask::task().start();
  if (peer_count() < 1) {
    throw std::runtime_error("bench_mesh: stream needs at least 2 workers");
  }
  if (self_id() == 0) {
    stream_sender(params);
  } else {
    stream_receiver(params);
  }
}

// `ditask --package bench_mesh --main ready --parallel-workers N`: the wall clock (CLOCK_REALTIME,
// comparable with the script's EPOCHREALTIME) when start() returned, i.e. the mesh was ready.
DITASK_MAIN(ready) {
  auto running = ditask::task().start();
  const auto unix_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  print_line("ready node=" + std::to_string(self_id()) + " peers=" + std::to_string(peer_count()) +
             " unix_us=" + std::to_string(unix_us));
}

namespace {

// The wall clock in microseconds (CLOCK_REALTIME: comparable across the workers and with the script).
std::int64_t unix_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// This process's open file descriptors (/proc/self/fd, less the one reading it).
std::int64_t open_fds() {
  std::error_code ec;
  std::int64_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n - 1;
}

// When the wave's first event reached this node and when its sender emitted it; how many of its
// `waves` numbered events came, and how many came out of order. Written by the dispatcher.
struct Wave {
  explicit Wave(std::int64_t count) : waves(count) {}
  const std::int64_t waves;
  std::atomic<std::int64_t> sent_us{0};
  std::atomic<std::int64_t> at_us{0};
  std::atomic<std::int64_t> received{0};      // events that arrived (`waves`, but at their sender: none)
  std::atomic<std::int64_t> out_of_order{0};  // arrived with another number than the next one expected
  Signal arrived;
};

// One line per node; `lost` and `dropped` are the transport's counts (router().stats()).
void print_scale(std::int64_t ready_us, const Wave& wave) {
  const auto stats = ditask::task().router().stats();
  print_line("scale node=" + std::to_string(self_id()) + " peers=" + std::to_string(peer_count()) +
             " ready_us=" + std::to_string(ready_us) + " wave_us=" + std::to_string(wave.at_us.load()) +
             " sent_us=" + std::to_string(wave.sent_us.load()) + " received=" + std::to_string(wave.received.load()) +
             " out_of_order=" + std::to_string(wave.out_of_order.load()) + " lost=" + std::to_string(stats.lost) +
             " dropped=" + std::to_string(stats.dropped) + " vmrss_kb=" + std::to_string(vmrss_kb()) +
             " fds=" + std::to_string(open_fds()));
}

// The job's worker count: WORLD_SIZE, which the launcher sets (this launcher's workers when absent).
std::int64_t world_size() {
  const char* text = std::getenv("WORLD_SIZE");
  const std::int64_t n = text != nullptr ? std::strtoll(text, nullptr, 10) : 0;
  return n > 0 ? n : ditask::task().router().parallel_workers();
}

// Node 0 of a job of several launchers: a star hub's start() waits for its own launcher's spokes
// only (the workers of other launchers that attach to it are not known in advance), so it waits
// here until every other worker of the job has joined. Errors: std::runtime_error after `timeout_s`.
void await_world(const Params& params) {
  const std::int64_t others = world_size() - 1;
  auto& task = ditask::task();
  auto all = std::make_shared<Signal>();
  const auto id = task.on(ditask::events::peer_joined, [all, others](const ditask::Kwargs&) {
    if (peer_count() >= others) {
      all->set();
    }
  });
  if (peer_count() >= others) {  // joined before the handler was there
    all->set();
  }
  const bool joined = all->wait_for(params.timeout());
  task.off(ditask::events::peer_joined, id);
  if (!joined) {
    throw std::runtime_error("bench_mesh: " + std::to_string(peer_count()) + " of the job's " +
                             std::to_string(others) + " other workers joined within " +
                             std::to_string(params.timeout().count()) + " s");
  }
}

}  // namespace

// `ditask --package bench_mesh --main scale --parallel-workers N [--topology star --relay]`; over
// several launchers, node 0's peers must be the whole job (the others attach to it).
DITASK_MAIN(scale) {
  const Params params{{"waves", 1}};
  if (params["waves"] < 1) {
    throw std::invalid_argument("bench_mesh: scale needs waves >= 1");
  }
  auto& task = ditask::task();
  auto running = task.start();
  const std::int64_t ready_us = unix_us();
  auto wave = std::make_shared<Wave>(params["waves"]);
  if (peer_count() == 0) {  // --topology alone: nobody to hear a wave
    wave->at_us = wave->sent_us = ready_us;
    print_scale(ready_us, *wave);
    return;
  }
  task.on("bm.wave", [wave](std::int64_t sent_us, std::int64_t number) {  // before ready(): nothing measured comes earlier
    const std::int64_t before = wave->received++;
    if (before == 0) {
      wave->sent_us = sent_us;
      wave->at_us = unix_us();
    }
    if (number != before) {
      ++wave->out_of_order;
    }
    if (before + 1 == wave->waves) {
      wave->arrived.set();
    }
  });
  if (self_id() != 0) {
    auto bye = task.waiter("bm.bye");
    task.on("bm.go", [&task, wave] {  // this node broadcasts the wave (and counts as reached by it)
      const std::int64_t now = unix_us();
      wave->sent_us = now;
      wave->at_us = now;
      for (std::int64_t number = 0; number < wave->waves; ++number) {
        task.emit_remote("bm.wave", now, number);
      }
      wave->arrived.set();
    });
    answer_probes();
    wave->arrived.wait(params.timeout(), "bm.wave");
    task.emit_to_node(0, "bm.got", self_id());
    await_bye(bye, params);  // a second copy of the wave, had there been one, came before the bye
    print_scale(ready_us, *wave);
    return;
  }
  // Node 0: every peer has its handlers, then the highest node broadcasts, then all say they got it.
  struct Got {
    std::mutex mutex;
    std::set<std::int64_t> nodes;
    std::size_t expected = 0;
    Signal all;
  };
  auto got = std::make_shared<Got>();
  if (world_size() > ditask::task().router().parallel_workers()) {
    await_world(params);
  }
  std::int64_t last = 0;
  for (const auto& peer : task.router().peers()) {
    last = std::max(last, peer.node_id);
  }
  got->expected = static_cast<std::size_t>(peer_count());
  task.on("bm.got", [got](std::int64_t node) {
    const std::lock_guard lock(got->mutex);
    if (got->nodes.insert(node).second && got->nodes.size() == got->expected) {
      got->all.set();
    }
  });
  await_receivers(params);
  if (last == 0) {
    wave->at_us = wave->sent_us = unix_us();
  } else {
    task.emit_to_node(last, "bm.go");
    wave->arrived.wait(params.timeout(), "bm.wave");
    got->all.wait(params.timeout(), "bm.got from every peer");
  }
  print_scale(ready_us, *wave);
  task.emit_remote("bm.bye");
}

// `ditask --package bench_mesh --main idle_rss --parallel-workers 3`
DITASK_MAIN(idle_rss) {
  auto running = ditask::task().start();
  print_line("idle_rss node=" + std::to_string(self_id()) +
             " peers=" + std::to_string(peer_count()) + " vmrss_kb=" + std::to_string(vmrss_kb()));
}
