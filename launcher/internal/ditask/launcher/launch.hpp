// SPDX-License-Identifier: MIT
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ditask/error.hpp"
#include "ditask/launcher/options.hpp"

namespace ditask::launcher {

/// How to start one worker process: the executable and its arguments (argv[1..]).
struct WorkerCommand {
  std::string exe;
  std::vector<std::string> args;
};

/// The launcher's own exit codes (before any worker starts) and the job-level ones.
enum class ExitCode : int { success = 0, usage = 2, internal = 3, rendezvous = 4, timeout = 124 };

/// The job could not be formed at its --rendezvous (a launcher missing, refused, or one that
/// disagrees about the job): exit code 4, apart from usage errors (2), before any worker starts.
class RendezvousFailed : public Error {
 public:
  using Error::Error;
};

/// Prints option_warnings() on stderr as `ditask: warning:` lines, then
/// plans the job, binds its sockets, starts and supervises the workers until all have ended,
/// prints the summary and returns the exit code (0, the first failed worker's code or
/// 128+signal, 124 on --timeout, 128+N when the launcher was stopped by signal N).
/// Errors: ditask::Error (exit 2) for problems found before any worker starts, RendezvousFailed
/// (exit 4) when the launchers of the job could not meet.
int launch(const Options& options, const WorkerCommand& command,
           const std::map<std::string, std::string>& extra_contract = {});

/// The plan --dry-run prints: computed without binding anything or opening the package (a
/// free port shows as port 0; the token as "<hidden>"). Prints option_warnings() on stderr.
nlohmann::json dry_run_plan(const Options& options);

/// Loads the package and looks up the entry in a short forked child (probe_main), so a bad
/// package fails before any worker starts; the child prints its own `ditask: error:` lines.
/// Call before any thread exists. Errors: PackageRejected when the probe fails.
void probe_package(const Options& options);

/// Thrown by probe_package; its message was already printed by the probe.
struct PackageRejected : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The launcher's environment as a map (for resolve_options and the workers' environment).
std::map<std::string, std::string> current_environment();

}  // namespace ditask::launcher
