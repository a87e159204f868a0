// SPDX-License-Identifier: MIT
// Measurements shared by the mesh benchmark module (plugins/bench_mesh) and its raw Asio baseline
// (ditask_raw_mesh_bench), so both sides of every ratio are measured the same way. Header-only:
// the baseline must not link the runtime.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>

#include <cerrno>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

namespace ditask::bench {

/// Monotonic nanoseconds: CLOCK_MONOTONIC (steady_clock on Linux) is one clock for every process
/// of the machine, so timestamps taken by different processes can be subtracted.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Context switches of this process (all threads): `all` is what `perf stat -e
/// context-switches` counts (voluntary and involuntary), `involuntary` the part where a runnable
/// thread was preempted (the scheduler's doing, not a wait of the program). Trivially copyable:
/// a child sends it over its socket as it is.
struct Switches {
  std::int64_t all = 0;
  std::int64_t involuntary = 0;
};

/// The switches between `from` and `to`.
inline Switches operator-(const Switches& to, const Switches& from) {
  return {to.all - from.all, to.involuntary - from.involuntary};
}

/// This process's context switches so far.
inline Switches context_switches() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return {usage.ru_nvcsw + usage.ru_nivcsw, usage.ru_nivcsw};
}

/// "ctxsw_per_rt=A ctxsw_involuntary_per_rt=B ctxsw_node0=N0 ctxsw_node1=N1": both processes'
/// switches over `rounds` round trips, as each rtt program prints them.
inline std::string switches_fields(const Switches& self, const Switches& peer, std::int64_t rounds) {
  char text[160];
  const auto per_rt = [&](std::int64_t n) { return static_cast<double>(n) / static_cast<double>(rounds); };
  std::snprintf(text, sizeof text, "ctxsw_per_rt=%.2f ctxsw_involuntary_per_rt=%.3f ctxsw_node0=%lld ctxsw_node1=%lld",
                per_rt(self.all + peer.all), per_rt(self.involuntary + peer.involuntary),
                static_cast<long long>(self.all), static_cast<long long>(peer.all));
  return text;
}

/// VmRSS of this process in kB, or -1 when /proc does not tell.
inline std::int64_t vmrss_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoll(line.substr(6));
    }
  }
  return -1;
}

/// Nanoseconds as microseconds with two decimals.
inline std::string micros(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(ns) / 1000.0);
  return text;
}

/// What a stream reader counted, sent back to the writer at the end (both ends are processes of
/// this machine, so the struct crosses as its bytes).
struct StreamReport {
  std::int64_t events = 0;
  std::int64_t bytes = 0;
  std::int64_t last_ns = 0;  ///< now_ns() when the last event arrived
};

/// Waits for every child (anything with a `pid`); throws when one did not exit 0.
template <class Children>
void reap(const Children& children) {
  int failed = 0;
  for (const auto& child : children) {
    int status = 0;
    while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
    failed += (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 0 : 1;
  }
  if (failed > 0) {
    throw std::runtime_error(std::to_string(failed) + " peer process(es) failed");
  }
}

}  // namespace ditask::bench
