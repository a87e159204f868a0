// SPDX-License-Identifier: MIT
// The first handler failure of a running task, kept until a module thread takes it (the next
// emit / sync / run / wait_for / Waiter::wait). Shared by the task and its waiters.
#pragma once

#include <atomic>
#include <exception>
#include <mutex>
#include <utility>

namespace ditask::detail {

/// Thread: any.
class FailureSlot {
 public:
  /// Keeps `error` unless one is pending already (the first failure wins).
  void store(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!error_) {
      error_ = std::move(error);
      pending_ = true;
    }
  }
  /// The pending failure, now no longer pending; null when none. Without one, no lock is taken
  /// (every emit asks).
  std::exception_ptr take() {
    if (!pending_.load()) {
      return nullptr;
    }
    std::lock_guard lock(mutex_);
    pending_ = false;
    return std::exchange(error_, nullptr);
  }
  /// Throws the pending failure once.
  void rethrow() {
    if (auto error = take()) {
      std::rethrow_exception(error);
    }
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;        // guarded by mutex_
  std::atomic<bool> pending_{false};  // error_ is set
};

}  // namespace ditask::detail
