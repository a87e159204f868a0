// SPDX-License-Identifier: MIT
// --summary-json: the end-of-run summary as JSON, for scripts and CI systems. The launcher knows
// each attempt's exit and resource use (wait4); each worker writes its own event and call counters
// at exit into a folder the launcher made (DITASK_STATS_FILE). Fields: docs/launcher.md#summary-json.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ditask/launcher/plan.hpp"
#include "summary.hpp"

namespace ditask::launcher {

/// A private folder where this launcher's workers write their counters at exit, one file per
/// attempt; made under $TMPDIR (else /tmp), removed with this object. Thread: any.
class WorkerStatsFolder {
 public:
  /// Makes the folder. Errors: ditask::Error when it cannot.
  WorkerStatsFolder();
  ~WorkerStatsFolder();
  WorkerStatsFolder(const WorkerStatsFolder&) = delete;
  WorkerStatsFolder& operator=(const WorkerStatsFolder&) = delete;

  /// The file attempt `attempt` of node `node_id` writes (its DITASK_STATS_FILE).
  std::string file_for(std::int64_t node_id, int attempt) const;
  /// The file attempt `attempt` of node `node_id` writes its --trace records to (DITASK_TRACE_FILE).
  std::string trace_file_for(std::int64_t node_id, int attempt) const;
  /// What that attempt wrote at its end, or null when it wrote nothing readable (it died before);
  /// with `live`, what it last wrote while running (for the status line).
  nlohmann::ordered_json read(std::int64_t node_id, int attempt, bool live = false) const;

 private:
  std::string path_;
};

/// The summary of this launcher's job: its outcome from `report`, and each local worker (in plan
/// order) with its attempts, their exits, resource use and the counters they wrote to `stats`.
nlohmann::ordered_json summary_json(const Report& report, const Plan& plan, double elapsed_seconds,
                            const WorkerStatsFolder& stats);

/// --summary-json's FILE with "{node}" (this launcher's first node id) and "{run}" (the run id)
/// replaced, so that the launchers of one job can write files of their own.
std::string summary_path(const std::string& pattern, const Plan& plan);

/// Refuses, before any worker starts, an output file (`flag` names the option: "--summary-json",
/// "--trace") that cannot be written: no such folder, a folder itself, no permission.
/// Errors: ditask::Error with a hint.
void check_output_file(const std::string& flag, const std::string& path);

/// Writes `summary` to `path` through a temporary file and a rename (a reader never sees half a
/// file). Errors: std::runtime_error.
void write_summary_json(const std::string& path, const nlohmann::ordered_json& summary);

}  // namespace ditask::launcher
