// SPDX-License-Identifier: MIT
// --trace: the workers' parts (Chrome trace-event JSON lines, one file per attempt) merged with
// the launcher's own marks into one Chrome trace file: a process track per worker named
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

/// Writes the merged trace to `path` (through a temporary file and a rename). A part's last line
/// cut by a crash is left out. Errors: ditask::Error when the file cannot be written.
void write_trace(const std::string& path, const Plan& plan, const Report& report, const WorkerStatsFolder& parts,
                 const std::vector<PosixProcessSpawner::Mark>& marks);

}  // namespace ditask::launcher
