// SPDX-License-Identifier: MIT
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ditask/launcher/options.hpp"
#include "process_spawner.hpp"

namespace ditask::launcher {

/// Why the launcher stopped the workers.
enum class StopCause { none, failure, signal, timeout };

/// The worker failure that decided the job.
struct Failure {
  std::int64_t node_id = 0;
  pid_t pid = 0;
  int attempt = 0;
  int status = 0;                        ///< raw wait status
  std::vector<std::string> last_stderr;  ///< oldest first
  std::string log_path;
};

/// A worker the launcher stopped.
struct Stopped {
  std::int64_t node_id = 0;
  pid_t pid = 0;
  bool clean = false;  ///< it exited 0 on the stop signal (a module that stops gracefully)
};

/// One ended attempt of a local worker.
struct AttemptRecord {
  int attempt = 0;
  pid_t pid = -1;                    ///< -1 when its process could not be started
  int status = 0;                    ///< raw wait status
  std::optional<ResourceUse> usage;  ///< unset when its process never started
};

/// One local worker at the end of the job.
struct WorkerRecord {
  std::int64_t node_id = 0;
  int attempt = 0;                     ///< its last attempt (= its restarts)
  std::vector<AttemptRecord> ended;    ///< its ended attempts, oldest first
  bool stopped_by_launcher = false;    ///< the launcher signalled its last attempt to stop
  bool still_running = false;          ///< it did not die after SIGKILL (the launcher gave up)
};

/// What happened to the job, for the summary and the exit code.
struct Report {
  bool stopping = false;
  StopCause cause = StopCause::none;
  int signal = 0;
  std::optional<Failure> failure;
  std::vector<Stopped> stopped;
  std::vector<std::string> also_failed;  ///< failed on their own while the job was stopping
  std::vector<WorkerRecord> workers;  ///< each local worker, filled in once all are done
};

/// "node 1 (pid 4711, attempt 0) killed by SIGSEGV" or "... exited with code 3".
std::string describe_failure(const Failure& failure);

/// Prints the summary to stderr, one write per line: the first failure with a hint and the
/// last lines of its stderr, the stop cause, the workers the launcher stopped, the exit code.
/// Prints nothing for a job where every worker succeeded (one line at log level info).
void print_summary(const Report& report, const Options& options);

/// The job's exit code: the failure's code or 128+signal, else 124 on timeout, 128+signal when
/// stopped by a signal, else 0.
int exit_code(const Report& report);

}  // namespace ditask::launcher
