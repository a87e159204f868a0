// SPDX-License-Identifier: MIT
#pragma once

#include "ditask/launcher/options.hpp"

namespace ditask::launcher::detail {

/// Converts and validates chosen raw values (absent = default) into Options.
/// Errors: ditask::Error naming the option, the bad value and, where it helps, the choices.
Options build_options(const RawValues& values);

/// Splits a comma list, trimming blanks and dropping empty items.
std::vector<std::string> split_list(const std::string& text);

}  // namespace ditask::launcher::detail
