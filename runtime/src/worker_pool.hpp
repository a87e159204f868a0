// SPDX-License-Identifier: MIT
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ditask::detail {

/// A fixed pool of threads for async-mode forwards and parallel(). A thread that waits for jobs
/// runs queued jobs itself meanwhile, so nested waits (parallel() inside an async forward)
/// cannot starve the pool. Jobs start in submission order. Thread: any.
class WorkerPool {
 public:
  /// The outcome of one job.
  struct Job {
    std::function<void()> fn;
    bool done = false;          // guarded by the pool's mutex
    std::exception_ptr error;   // guarded by the pool's mutex
  };
  using Handle = std::shared_ptr<Job>;

  explicit WorkerPool(int threads);
  /// Runs the queued jobs, then joins the threads.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues `fn`; its exception is kept in the handle.
  Handle submit(std::function<void()> fn);
  /// Waits for every job in `jobs` and returns the first error (in `jobs` order), or null.
  std::exception_ptr wait(const std::vector<Handle>& jobs);
  /// True while the calling thread runs a job of any pool (where waiting for "all pending
  /// forwards" would include the caller itself).
  static bool in_job() noexcept;

 private:
  void worker_loop();
  void run_locked(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable changed_;  // a job was queued or finished, or stopping
  std::deque<Handle> queue_;         // guarded by mutex_
  bool stopping_ = false;            // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace ditask::detail
