// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ditask/export.hpp"

namespace ditask {

/// The candidate closest to `typo` by edit distance, when close enough to be a likely typo
/// (distance <= max(2, length / 3)); for "did you mean '...'?" hints.
std::optional<std::string> closest_match(const std::string& typo,
                                                    const std::vector<std::string>& candidates);

/// "a, b, c" (for hints listing valid choices).
std::string join(const std::vector<std::string>& items, const std::string& separator = ", ");

}  // namespace ditask
