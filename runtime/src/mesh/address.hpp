// SPDX-License-Identifier: MIT
// Mesh addresses: `tcp://host:port` and `ipc:///path` (a Unix stream socket).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ditask/export.hpp"

namespace ditask::detail::mesh {

/// The longest Unix socket path (sun_path holds 108 bytes with its terminating NUL).
inline constexpr std::size_t kMaxIpcPath = 107;

/// One parsed address.
struct Address {
  enum class Kind { tcp, ipc };
  Kind kind = Kind::tcp;
  std::string host;         ///< tcp: host name or IP literal (IPv6 without brackets)
  std::uint16_t port = 0;   ///< tcp
  std::string path;         ///< ipc
  std::string text;         ///< the address as given
};

/// Parses `tcp://host:port` (`tcp://[::1]:port` for IPv6) or `ipc:///abs/path`.
/// Errors: ditask::Error naming the address: unknown scheme, missing/bad port, empty host,
/// relative or too long ipc path (never truncated).
Address parse_address(std::string_view text);

}  // namespace ditask::detail::mesh
