// SPDX-License-Identifier: MIT
#pragma once

// Internals of module loading (declared for the public side in ditask/runtime/worker.hpp).

#include <string>
#include <string_view>
#include <vector>

namespace ditask::detail {

/// Prefix of the C symbol that DITASK_MAIN(name) exports for `name`.
inline constexpr std::string_view kEntryPrefix = "ditask_entry_";
/// Prefix of the ABI version symbol exported next to each entry.
inline constexpr std::string_view kEntryAbiPrefix = "ditask_entry_abi_";

/// The entry names among exported `symbols`: `ditask_entry_<n>` with a `ditask_entry_abi_<n>`
/// beside it (so the ABI symbols themselves are not listed), sorted and unique.
std::vector<std::string> entries_from_symbols(const std::vector<std::string>& symbols);

/// The hint for a missing entry: "did you mean 'x'?" when one of `entries` is within
/// max(2, size/3) edits of `wanted`, else the list of entries (or that there are none).
std::string missing_entry_hint(const std::string& wanted, const std::vector<std::string>& entries);

}  // namespace ditask::detail
