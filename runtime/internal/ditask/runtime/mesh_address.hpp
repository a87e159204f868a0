// SPDX-License-Identifier: MIT
#pragma once

/// Mesh addresses as a worker parses them, for the launcher to check --attach-to before any
/// worker starts.

#include <string>
#include <string_view>

#include "ditask/export.hpp"

namespace ditask {

/// The hint that goes with a bad mesh address.
inline constexpr std::string_view kMeshAddressHint = "use tcp://host:port or ipc:///absolute/path";

/// Why a worker's mesh would refuse `text` ("bad port '0'", "no host", "the ipc path must be
/// absolute", ...), or "" when it is a valid tcp://host:port or ipc:///absolute/path.
std::string mesh_address_problem(const std::string& text);

}  // namespace ditask
