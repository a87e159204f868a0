// SPDX-License-Identifier: MIT
// A value shared between event handlers (the dispatcher thread) and a module's own loop, with a
// wait for a condition on it. Thread: any; update() wakes every wait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace rl {

template <class T>
class Shared {
 public:
  /// Calls `fn(value)` under the lock, then wakes the waiters.
  template <class F>
  void update(F&& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn(value_);
    }
    changed_.notify_all();
  }
  /// Calls `fn(value)` under the lock and returns what it returns.
  template <class F>
  auto read(F&& fn) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fn(value_);
  }
  /// Waits until `done(value)` holds or `timeout` passes (then false; a bound, not a
  /// synchronisation), then calls `then(value)` under the same lock.
  template <class P, class F>
  bool wait(P&& done, F&& then, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return done(value_); })) {
      return false;
    }
    then(value_);
    return true;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  T value_{};
};

}  // namespace rl
