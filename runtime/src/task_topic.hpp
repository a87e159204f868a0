// SPDX-License-Identifier: MIT
// How the task layer names its events on a transport (DI-engine's `task.<event>` topics).
#pragma once

#include <string>
#include <vector>

#include "ditask/router.hpp"

namespace ditask::detail {

/// The prefix of every task event's topic on the wire; a transport carries other topics apart.
inline constexpr const char* kTaskTopicPrefix = "task.";

/// The event names every peer is sent whatever handlers it has (NodeSettings::always_wanted):
/// the runtime's own ("ditask." names, which its parts handle) and a peer's finish.
inline std::vector<std::string> task_always_wanted() { return {"ditask.", events::finish}; }

}  // namespace ditask::detail
