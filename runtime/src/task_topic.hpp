// SPDX-License-Identifier: MIT
// How the task layer names its events on a transport (DI-engine's `task.<event>` topics).
#pragma once

namespace ditask::detail {

/// The prefix of every task event's topic on the wire; a transport carries other topics apart.
inline constexpr const char* kTaskTopicPrefix = "task.";

}  // namespace ditask::detail
