// SPDX-License-Identifier: MIT
// What the baselines of `scripts/bench.sh rpc` share (ditask_raw_calls_bench, ditask_grpc_calls_bench):
// the `calls` subcommand's options and the line each prints, so both are read the same way as
// the bench_rpc module's. Header-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_measure.hpp"

namespace ditask::bench {

/// A bad command line: exit code 2 and a usage line.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `calls [--inflight K] [--rounds N] [--warmup N] [--size BYTES]` over their defaults (64,
/// 200000, 20000, 64). Errors: UsageError naming the option.
inline std::map<std::string, std::int64_t> parse_calls_options(int argc, char** argv) {
  std::map<std::string, std::int64_t> values{{"inflight", 64}, {"rounds", 200000}, {"warmup", 20000}, {"size", 64}};
  if (argc < 2 || std::string(argv[1]) != "calls") {
    throw UsageError(argc < 2 ? "no subcommand" : "unknown subcommand '" + std::string(argv[1]) + "'");
  }
  for (int i = 2; i < argc; i += 2) {
    const std::string name = argv[i];
    const auto it = name.rfind("--", 0) == 0 ? values.find(name.substr(2)) : values.end();
    if (it == values.end()) {
      throw UsageError("unknown option '" + name + "'");
    }
    if (i + 1 >= argc) {
      throw UsageError("option '" + name + "' needs a value");
    }
    const std::string value = argv[i + 1];
    std::size_t used = 0;
    try {
      it->second = std::stoll(value, &used);
    } catch (const std::logic_error&) {
      used = 0;
    }
    if (value.empty() || used != value.size() || it->second < 0) {
      throw UsageError(name + " needs a number >= 0, not '" + value + "'");
    }
  }
  if (values["inflight"] < 1 || values["rounds"] < 1) {
    throw UsageError("--inflight and --rounds need a number >= 1");
  }
  if (values["size"] > (1 << 20) || values["inflight"] > 4096) {
    throw UsageError("--size is at most 1048576 and --inflight at most 4096");
  }
  return values;
}

/// Prints `<name> calls inflight=K size=S rounds=N p50_us=.. p99_us=.. calls_per_s=..` from the
/// measured calls' latencies (nanoseconds, sorted here) over `elapsed_ns`.
inline void print_calls(const char* name, std::int64_t inflight, std::int64_t size, std::vector<std::int64_t>& latencies,
                        std::int64_t elapsed_ns) {
  std::sort(latencies.begin(), latencies.end());
  const std::size_t count = latencies.size();
  std::printf("%s calls inflight=%lld size=%lld rounds=%zu p50_us=%s p99_us=%s calls_per_s=%.0f\n", name,
              static_cast<long long>(inflight), static_cast<long long>(size), count,
              micros(latencies[count / 2]).c_str(), micros(latencies[count * 99 / 100]).c_str(),
              static_cast<double>(count) * 1e9 / static_cast<double>(elapsed_ns));
  std::fflush(stdout);
}

}  // namespace ditask::bench
