// SPDX-License-Identifier: MIT
#pragma once

#include <sys/types.h>

#include <string>

namespace ditask::launcher {

/// What signal_group() did.
enum class SignalResult { sent, refused, gone, failed };

/// Sends `sig` to the process group `pgid`: the one way the launcher signals workers.
/// Refuses a group id <= 1 (kill(-1, ...) as root hits every process on the machine) and the
/// launcher's own group. Thread: any. Errors: none (the result says what happened).
SignalResult signal_group(pid_t pgid, int sig) noexcept;

/// "SIGTERM", "SIGSEGV", ... or "signal <n>".
std::string signal_name(int sig);

/// A hint for a worker killed by `sig` ("out of memory?" for SIGKILL), or empty.
std::string signal_hint(int sig);

}  // namespace ditask::launcher
