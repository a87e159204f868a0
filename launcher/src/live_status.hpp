// SPDX-License-Identifier: MIT
// The figures of the live status line: worker counts from the supervision rules, rates and the
// slowest worker from the counter files the running workers rewrite every second.
#pragma once

#include <chrono>
#include <map>
#include <utility>

#include "ditask/launcher/plan.hpp"
#include "status_line.hpp"
#include "summary_json.hpp"
#include "supervision.hpp"

namespace ditask::launcher {

/// Samples the job for the status line. Thread: the launcher's loop.
class LiveStatus {
 public:
  /// Every reference outlives this object.
  LiveStatus(const Plan& plan, const Supervision& rules, const WorkerStatsFolder& stats);
  /// The figures now; rates are over the time since the previous sample.
  StatusFigures sample();

 private:
  struct Last {
    std::uint64_t received = 0;
    std::uint64_t calls = 0;
  };
  const Plan& plan_;
  const Supervision& rules_;
  const WorkerStatsFolder& stats_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_time_ = started_;
  std::map<std::pair<std::size_t, int>, Last> last_;  // by (worker, attempt)
};

}  // namespace ditask::launcher
