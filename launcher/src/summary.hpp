// SPDX-License-Identifier: MIT
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ditask/launcher/options.hpp"

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

/// What happened to the job, for the summary and the exit code.
struct Report {
  bool stopping = false;
  StopCause cause = StopCause::none;
  int signal = 0;
  std::optional<Failure> failure;
  std::vector<Stopped> stopped;
  std::vector<std::string> also_failed;  ///< failed on their own while the job was stopping
  std::vector<int> attempts;  ///< last attempt of each local worker
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
