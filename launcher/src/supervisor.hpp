// SPDX-License-Identifier: MIT
#pragma once

#include <map>
#include <string>

#include "ditask/launcher/launch.hpp"
#include "ditask/launcher/plan.hpp"
#include "listen_sockets.hpp"

namespace ditask::launcher {

/// Starts every planned worker and watches them from one Asio event loop: output lines, exits,
/// signals, restarts, fail-fast, timeout, summary. Returns the job's exit code.
/// Thread: the calling thread runs the loop; no other threads.
int supervise(const Options& options, const Plan& plan, ListenSockets& sockets,
              const WorkerCommand& command, const std::map<std::string, std::string>& environment);

}  // namespace ditask::launcher
