// SPDX-License-Identifier: MIT
#pragma once

#include <unistd.h>

#include <cstddef>
#include <string_view>

namespace ditask::detail {

/// Writes all of `text` to `fd`, retrying short writes; gives up silently on error.
/// A line written this way by many processes sharing one pipe stays whole (one write per line).
inline void write_all(int fd, std::string_view text) noexcept {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) {
      return;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace ditask::detail
