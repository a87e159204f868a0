// SPDX-License-Identifier: MIT
// Starting a worker process without fork(): posix_spawn (glibc: clone with CLONE_VM|CLONE_VFORK)
// neither copies the launcher's page tables nor leaves it copy-on-write faults afterwards, which
// made fork the largest cost of starting 32 workers (about 0.8 ms of launcher CPU each here).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ditask::launcher {

/// The fd a worker finds its pre-bound listening socket on (announced as DITASK_LISTEN_FD).
inline constexpr int kListenFd = 3;

/// What one worker process starts with.
struct SpawnRequest {
  std::string exe;                ///< absolute path of the executable
  std::vector<std::string> args;  ///< argv[1..]
  std::vector<std::string> env;   ///< the whole environment, KEY=VALUE
  int stdout_fd = -1;             ///< becomes its stdout
  int stderr_fd = -1;             ///< becomes its stderr
  int listen_fd = -1;             ///< becomes kListenFd; -1: none
};

/// Starts `request.exe` with stdin from /dev/null, the given stdout/stderr and listening
/// socket, every other fd closed, in a process group of its own (the launcher signals workers as
/// groups, and Ctrl-C reaches the launcher once), SIGHUP and SIGPIPE back at their defaults and no
/// signal blocked. It arms its parent-death signal itself (die_with_launcher). Returns its pid.
/// Errors: std::system_error "cannot execute <exe>" when it cannot be started.
pid_t spawn_worker(const SpawnRequest& request);

}  // namespace ditask::launcher
