// SPDX-License-Identifier: MIT
// A word one thread sleeps on until another changes it (a Linux futex), for the hand-overs on the
// hot paths. A condition variable costs three system calls per hand-over there: the wake, the
// wait, and one more at the unlock after the wait, because glibc's condition wait takes its mutex
// back marked as contended. This costs the wait and, only when a thread sleeps, the wake.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>

namespace ditask::detail {

/// Sleep until woken. Usage: `seen = value()`, check the condition (under its own lock or
/// atomics), then `wait(seen)`; the waker changes the condition, then calls `wake_all()`. A wake
/// between the two is never lost: wait() returns at once once the word moved. Thread: any.
class WakeWord {
 public:
  /// The word now; take it before checking the condition that wait() waits for.
  std::uint32_t value() const noexcept { return word_.load(std::memory_order_seq_cst); }

  /// Sleeps while the word is `seen`, at most until `deadline` (time_point::max(): no bound).
  /// Returns false when the deadline passed with the word unchanged. May return early (a signal):
  /// callers check their condition in a loop.
  bool wait(std::uint32_t seen, std::chrono::steady_clock::time_point deadline) noexcept {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    bool moved = word_.load(std::memory_order_seq_cst) != seen;
    if (!moved) {
      timespec relative{};
      const timespec* timeout = nullptr;
      if (deadline != std::chrono::steady_clock::time_point::max()) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) {
          sleepers_.fetch_sub(1, std::memory_order_seq_cst);
          return false;
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        relative.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
        relative.tv_nsec = static_cast<long>(ns % 1'000'000'000);
        timeout = &relative;
      }
      ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, seen, timeout, nullptr, 0);
      moved = word_.load(std::memory_order_seq_cst) != seen;
    }
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    return moved || deadline == std::chrono::steady_clock::time_point::max() ||
           std::chrono::steady_clock::now() < deadline;
  }

  /// Moves the word and wakes every thread sleeping on it (a system call only when one sleeps).
  void wake_all() noexcept {
    word_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
    }
  }

 private:
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t), "the futex is the atomic's word");
  std::atomic<std::uint32_t> word_{0};
  std::atomic<std::uint32_t> sleepers_{0};
};

}  // namespace ditask::detail
