// SPDX-License-Identifier: MIT
#pragma once

#include "ditask/export.hpp"

/// The project version, as in `ditask --version`.
#define DITASK_VERSION "0.1.0"

namespace ditask {
/// The runtime library's version string (may differ from DITASK_VERSION of a module's headers).
DITASK_API const char* runtime_version() noexcept;
}  // namespace ditask
