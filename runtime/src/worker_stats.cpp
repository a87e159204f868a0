// SPDX-License-Identifier: MIT
#include "worker_stats.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ditask/runtime/log.hpp"
#include "ditask/task.hpp"
#include "internal_access.hpp"
#include "rpc/rpc_engine.hpp"

namespace ditask::detail {
namespace {

/// Counters of the task runs that ended (their engines are gone).
struct FinishedRuns {
  std::atomic<std::uint64_t> calls{0}, answered{0}, failed{0}, timed_out{0}, late_replies{0}, served{0};
};

FinishedRuns& finished_runs() {
  static FinishedRuns runs;
  return runs;
}

std::mutex g_write_mutex;        // one writer at a time: the periodic thread, the exit, SIGTERM
bool g_final_written = false;    // guarded by g_write_mutex

}  // namespace

void add_finished_rpc_run(const RpcStats& stats) noexcept {
  auto& runs = finished_runs();
  runs.calls += stats.calls;
  runs.answered += stats.answered;
  runs.failed += stats.failed;
  runs.timed_out += stats.timed_out;
  runs.late_replies += stats.late_replies;
  runs.served += stats.served;
}

RpcStats worker_rpc_totals() {
  RpcStats total;
  if (auto engine = current_rpc_engine()) {
    total = engine->stats();
  }
  const auto& runs = finished_runs();
  total.calls += runs.calls;
  total.answered += runs.answered;
  total.failed += runs.failed;
  total.timed_out += runs.timed_out;
  total.late_replies += runs.late_replies;
  total.served += runs.served;
  return total;
}

void write_worker_stats(const TransportStats& transport, bool final) noexcept {
  const char* path = std::getenv("DITASK_STATS_FILE");
  if (path == nullptr || *path == '\0') {
    return;
  }
  std::lock_guard lock(g_write_mutex);
  if (g_final_written) {
    return;
  }
  g_final_written = final;
  try {
    const RpcStats calls = worker_rpc_totals();
    const nlohmann::ordered_json stats = {
        {"events",
         {{"sent", transport.sent},
          {"received", transport.received},
          {"lost", transport.lost},
          {"dropped", transport.dropped},
          {"unhandled", transport.unhandled}}},
        {"calls",
         {{"made", calls.calls},
          {"answered", calls.answered},
          {"failed", calls.failed},
          {"timed_out", calls.timed_out},
          {"served", calls.served}}},
        {"backlog", TaskAccess::backlog(task())},
    };
    // The periodic writes (the status line) go to a file of their own: the file the summary reads
    // holds only what the worker wrote at its end, so a worker that died has no counters there.
    const std::string target = final ? std::string(path) : std::string(path) + ".live";
    const std::string temporary = target + ".tmp";
    {
      std::ofstream out(temporary, std::ios::trunc);
      out << stats.dump() << '\n';
      out.close();
      if (!out) {
        throw std::runtime_error("cannot write '" + temporary + "'");
      }
    }
    if (std::rename(temporary.c_str(), target.c_str()) != 0) {
      throw std::runtime_error("cannot rename '" + temporary + "' to '" + target + "'");
    }
  } catch (const std::exception& e) {
    static bool warned = false;  // a periodic write that fails would fail every time
    if (final || !warned) {
      warned = true;
      DITASK_LOG(warn, "worker") << "the launcher will miss this worker's counters: " << e.what();
    }
  }
}

PeriodicStats::PeriodicStats() {
  const char* text = std::getenv("DITASK_STATS_PERIOD_MS");
  const long long period_ms = text != nullptr ? std::atoll(text) : 0;
  if (period_ms > 0 && std::getenv("DITASK_STATS_FILE") != nullptr) {
    thread_ = std::make_unique<PeriodicThread>(std::chrono::milliseconds(period_ms),
                                               [] { write_worker_stats(task().router().stats(), false); });
  }
}

PeriodicStats::~PeriodicStats() = default;

}  // namespace ditask::detail
