// SPDX-License-Identifier: MIT
// A worker's own counters for the launcher's --summary-json: written once, at the worker's exit,
// to the file the launcher named in DITASK_STATS_FILE. The launcher adds what only it can see
// (exit status, CPU time, peak memory) and reads nothing of a worker that died before writing.
#pragma once

#include <memory>

#include "ditask/router.hpp"
#include "ditask/rpc_callee.hpp"
#include "periodic_thread.hpp"

namespace ditask::detail {

/// Adds a finished task run's call counters to the worker's totals (a module may start and stop
/// its task more than once; each run has its own engine). Thread: any.
void add_finished_rpc_run(const RpcStats& stats) noexcept;

/// The worker's call counters: the finished runs plus the running one. Thread: any.
RpcStats worker_rpc_totals();

/// Writes {"events": {...}, "calls": {...}, "backlog": n} to $DITASK_STATS_FILE, when set, through
/// a temporary file and a rename (a reader never sees half a file). `transport` is the transport's
/// count; `final`: the worker is ending, and no later periodic write may replace this one. Never
/// throws: a failed write is logged as a warning. Thread: any, not a signal handler.
void write_worker_stats(const TransportStats& transport, bool final = true) noexcept;

/// With DITASK_STATS_PERIOD_MS set (the launcher's live status line), a thread that writes the
/// counters at that period to $DITASK_STATS_FILE.live while the worker runs; otherwise nothing.
/// Thread: the owner's.
class PeriodicStats {
 public:
  PeriodicStats();
  /// Stops and joins the thread.
  ~PeriodicStats();
  PeriodicStats(const PeriodicStats&) = delete;
  PeriodicStats& operator=(const PeriodicStats&) = delete;

 private:
  std::unique_ptr<PeriodicThread> thread_;
};

}  // namespace ditask::detail
