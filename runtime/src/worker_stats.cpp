// SPDX-License-Identifier: MIT
#include "worker_stats.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ditask/runtime/log.hpp"
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

void write_worker_stats(const TransportStats& transport) noexcept {
  const char* path = std::getenv("DITASK_STATS_FILE");
  if (path == nullptr || *path == '\0') {
    return;
  }
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
    };
    const std::string temporary = std::string(path) + ".tmp";
    {
      std::ofstream out(temporary, std::ios::trunc);
      out << stats.dump() << '\n';
      out.close();
      if (!out) {
        throw std::runtime_error("cannot write '" + temporary + "'");
      }
    }
    if (std::rename(temporary.c_str(), path) != 0) {
      throw std::runtime_error("cannot rename '" + temporary + "' to '" + path + "'");
    }
  } catch (const std::exception& e) {
    DITASK_LOG(warn, "worker") << "the launcher's --summary-json will miss this worker's counters: " << e.what();
  }
}

}  // namespace ditask::detail
