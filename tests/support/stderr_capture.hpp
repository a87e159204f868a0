// SPDX-License-Identifier: MIT
// Captures what this process writes to stderr (fd 2) while it lives, e.g. the runtime's log lines.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

namespace ditask::test {

/// Redirects fd 2 into a pipe read by a thread of its own; restores it when destroyed.
/// Thread: one owner; text() and wait_for() from that owner.
class StderrCapture {
 public:
  StderrCapture() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    saved_ = ::dup(2);
    REQUIRE(saved_ >= 0);
    REQUIRE(::dup2(fds[1], 2) == 2);
    ::close(fds[1]);
    read_fd_ = fds[0];
    reader_ = std::thread([this] { read_all(); });
  }
  ~StderrCapture() {
    ::dup2(saved_, 2);  // closes the pipe's last write end: the reader sees its end
    ::close(saved_);
    reader_.join();
    ::close(read_fd_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  /// Everything captured so far.
  std::string text() const {
    std::lock_guard lock(mutex_);
    return text_;
  }
  /// Waits (at most `timeout`) until the captured text contains `needle`; true when it does.
  bool wait_for(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return text_.find(needle) != std::string::npos; });
  }

 private:
  void read_all() {
    char buf[4096];
    while (true) {
      const ssize_t n = ::read(read_fd_, buf, sizeof buf);
      if (n <= 0) {
        return;
      }
      {
        std::lock_guard lock(mutex_);
        text_.append(buf, static_cast<std::size_t>(n));
      }
      changed_.notify_all();
    }
  }

  int saved_ = -1;
  int read_fd_ = -1;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string text_;
};

}  // namespace ditask::test
