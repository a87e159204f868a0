// SPDX-License-Identifier: MIT
// A thread that runs a function at a fixed period until it is destroyed: the worker's counter
// file for the status line (worker_stats.hpp) and the trace flusher (trace/trace.hpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace ditask::detail {

/// Calls `tick` every `period` on a thread of its own; the destructor wakes the thread and joins
/// it (a tick in progress finishes first). Thread: the owner's.
class PeriodicThread {
 public:
  PeriodicThread(std::chrono::milliseconds period, std::function<void()> tick)
      : thread_([this, period, tick = std::move(tick)] {
          std::unique_lock lock(mutex_);
          while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
            lock.unlock();
            tick();
            lock.lock();
          }
        }) {}
  ~PeriodicThread() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace ditask::detail
