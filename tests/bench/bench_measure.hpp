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

/// Context switches of this process (all threads) so far, voluntary and involuntary: what
/// `perf stat -e context-switches` counts, but for a window of our choosing.
inline std::int64_t context_switches() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw + usage.ru_nivcsw;
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
