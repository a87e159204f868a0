// SPDX-License-Identifier: MIT
#pragma once

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string_view>

namespace ditask::detail {

/// Writes all of `text` to `fd`, retrying short writes, writes interrupted by a signal (Asio's
/// signal handlers are installed without SA_RESTART) and a full non-blocking pipe; gives up
/// silently on any other error. A line written this way by many processes sharing one pipe
/// stays whole (one write per line, up to PIPE_BUF bytes).
inline void write_all(int fd, std::string_view text) noexcept {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd wait_writable{fd, POLLOUT, 0};
      ::poll(&wait_writable, 1, -1);
      continue;
    }
    if (n <= 0) {
      return;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace ditask::detail
