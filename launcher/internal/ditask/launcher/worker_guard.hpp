// SPDX-License-Identifier: MIT
#pragma once

namespace ditask::launcher {

/// In a worker the launcher started (DITASK_LAUNCHER_PID set): asks the kernel for SIGKILL when
/// the launcher dies, and dies now if it already has (its parent is no longer that pid). Call it
/// first thing in worker mode. A no-op without DITASK_LAUNCHER_PID.
void die_with_launcher() noexcept;

}  // namespace ditask::launcher
