// SPDX-License-Identifier: MIT
#pragma once

#include <functional>

namespace ditask::detail {

/// Sets (or, with an empty function, clears) what Task::start runs first: worker mode starts
/// its SIGUSR1/SIGUSR2 watcher there, so a worker whose module never starts the task never pays
/// for that thread. Thread: any.
void set_start_hook(std::function<void()> hook);

/// Runs the hook, if any. Thread: the thread calling Task::start.
void run_start_hook();

}  // namespace ditask::detail
