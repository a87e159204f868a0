// SPDX-License-Identifier: MIT
#include "worker_stats.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ditask/runtime/log.hpp"
#include "ditask/runtime/replace_file.hpp"
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

/// Adds each call counter of `from` to `to` (plain or atomic counters).
template <typename To, typename From>
void add_call_counts(To& to, const From& from) noexcept {
  to.calls += from.calls;
  to.answered += from.answered;
  to.failed += from.failed;
  to.timed_out += from.timed_out;
  to.late_replies += from.late_replies;
  to.served += from.served;
}

}  // namespace

void add_finished_rpc_run(const RpcStats& stats) noexcept {
  add_call_counts(finished_runs(), stats);
}

RpcStats worker_rpc_totals() {
  RpcStats total;
  if (auto engine = current_rpc_engine()) {
    total = engine->stats();
  }
  add_call_counts(total, finished_runs());
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
    replace_file(target, "the counters", [&](std::ofstream& out) { out << stats.dump() << '\n'; });
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
