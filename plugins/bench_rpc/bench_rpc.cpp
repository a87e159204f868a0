// SPDX-License-Identifier: MIT
// The ditask side of `scripts/bench.sh rpc`: remote-call round trips between 2 workers.
//   ditask --package bench_rpc --main calls --parallel-workers 2 -- rounds=20000 inflight=1 size=64 inline=0
// Node 1 defines echo(bytes) -> bytes (inline=1: with define_inline, run as each call arrives;
// else with define, on the caller's queue thread); node 0 makes `warmup` calls, then `rounds` calls of `size`
// bytes keeping `inflight` of them in flight (each new call starts when the oldest answered), and
// prints one line `bench_rpc calls inflight=K size=S p50_us=.. p99_us=.. calls_per_s=..` (the
// launcher tags it `[node 0]`). Latency is from a call's start to its result in hand.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <ditask/ditask.hpp>

#include "bench_measure.hpp"

namespace {

using ditask::bench::micros;
using ditask::bench::now_ns;

void print_line(const std::string& line) {
  std::printf("bench_rpc %s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

DITASK_MAIN(calls) {
  auto p = ditask::ModuleArgs::integers({{"rounds", 20000}, {"warmup", 2000}, {"inflight", 1}, {"size", 64}, {"timeout_s", 120}, {"inline", 0}});
  auto& rpc = ditask::rpc();
  auto echo = [](std::vector<std::uint8_t> blob) { return blob; };
  if (p["inline"] != 0) {
    rpc.define_inline("echo", echo);
  } else {
    rpc.define("echo", echo);
  }
  rpc.set_default_timeout(std::chrono::seconds(p["timeout_s"]));
  auto& task = ditask::task();
  auto running = task.start();
  if (task.router().node_id() != 0) {
    auto finish = task.waiter(ditask::events::finish);  // before ready(), which drops early events
    task.ready();
    if (!finish.wait(std::chrono::seconds(p["timeout_s"]))) {
      throw std::runtime_error("bench_rpc: no finish from node 0");
    }
    return;
  }
  const std::vector<std::uint8_t> blob(static_cast<std::size_t>(p["size"]), 0x5a);
  const auto inflight = static_cast<std::size_t>(std::max<std::int64_t>(1, p["inflight"]));
  for (std::int64_t i = 0; i < p["warmup"]; ++i) {
    rpc.call<std::vector<std::uint8_t>>(1, "echo", blob);
  }
  const std::int64_t rounds = p["rounds"];  // read once: the loop costs what the calls cost
  std::vector<std::int64_t> latencies;
  latencies.reserve(static_cast<std::size_t>(rounds));
  std::deque<std::pair<ditask::Future<std::vector<std::uint8_t>>, std::int64_t>> window;
  const auto started = now_ns();
  std::int64_t issued = 0;
  while (issued < rounds || !window.empty()) {
    if (issued < rounds && window.size() < inflight) {
      window.emplace_back(rpc.call_async<std::vector<std::uint8_t>>(1, "echo", blob), now_ns());
      ++issued;
      continue;
    }
    auto [future, start] = std::move(window.front());
    window.pop_front();
    if (future.get().size() != blob.size()) {
      throw std::runtime_error("bench_rpc: echo returned the wrong size");
    }
    latencies.push_back(now_ns() - start);
  }
  const auto elapsed = now_ns() - started;
  std::sort(latencies.begin(), latencies.end());
  const auto n = latencies.size();
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.0f", static_cast<double>(n) * 1e9 / static_cast<double>(elapsed));
  print_line("calls inflight=" + std::to_string(inflight) + " size=" + std::to_string(p["size"]) +
             " inline=" + std::to_string(p["inline"]) +
             " rounds=" + std::to_string(n) + " p50_us=" + micros(latencies[n / 2]) +
             " p99_us=" + micros(latencies[n * 99 / 100]) + " calls_per_s=" + rate);
}
