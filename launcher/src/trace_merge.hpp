// SPDX-License-Identifier: MIT
// --trace: the workers' parts (raw records, one file per attempt) formatted and merged with the
// launcher's own marks into one Chrome trace file: a process track per worker named
// "node N (roles)", a thread track per runtime thread, the launcher's starts and exits on a
// "launcher" thread of each worker. Opens in ui.perfetto.dev and chrome://tracing.
#pragma once

#include <string>
#include <vector>

#include "ditask/launcher/plan.hpp"
#include "process_spawner_posix.hpp"
#include "summary.hpp"
#include "summary_json.hpp"

namespace ditask::launcher {

/// Writes the merged trace to `path` (through a temporary file and a rename). What a crash cut
/// from a part's last block is left out. Errors: std::runtime_error when the file
/// cannot be written.
void write_trace(const std::string& path, const Plan& plan, const Report& report, const WorkerStatsFolder& parts,
                 const std::vector<PosixProcessSpawner::Mark>& marks);

}  // namespace ditask::launcher
