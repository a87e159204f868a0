// SPDX-License-Identifier: MIT
#include "worker_pool.hpp"

#include "transport/inline_write.hpp"

#include <algorithm>

namespace ditask::detail {
namespace {
thread_local int t_job_depth = 0;
}  // namespace

bool WorkerPool::in_job() noexcept { return t_job_depth > 0; }

WorkerPool::WorkerPool(int threads) {
  threads_.reserve(static_cast<std::size_t>(std::max(threads, 1)));
  for (int i = 0; i < std::max(threads, 1); ++i) {
    threads_.emplace_back([this] { worker_loop(); });
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_) {
    t.join();
  }
}

WorkerPool::Handle WorkerPool::submit(std::function<void()> fn) {
  auto job = std::make_shared<Job>();
  job->fn = std::move(fn);
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(job);
  }
  changed_.notify_all();
  return job;
}

void WorkerPool::run_locked(std::unique_lock<std::mutex>& lock) {
  Handle job = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  std::exception_ptr error;
  ++t_job_depth;
  try {
    job->fn();
  } catch (...) {
    error = std::current_exception();
  }
  --t_job_depth;
  job->fn = nullptr;  // release captures before waking waiters
  lock.lock();
  job->done = true;
  job->error = error;
  changed_.notify_all();
}

void WorkerPool::worker_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) {
      return;
    }
    run_locked(lock);
  }
}

std::exception_ptr WorkerPool::wait(const std::vector<Handle>& jobs) {
  detail::before_wait("jobs of the worker pool");  // the jobs may wait for what this thread held
  std::unique_lock lock(mutex_);
  auto all_done = [&] {
    return std::all_of(jobs.begin(), jobs.end(), [](const Handle& j) { return j->done; });
  };
  while (!all_done()) {
    if (!queue_.empty()) {
      run_locked(lock);  // help instead of blocking a thread the jobs may need
      continue;
    }
    changed_.wait(lock);
  }
  for (const auto& j : jobs) {
    if (j->error) {
      return j->error;
    }
  }
  return nullptr;
}

}  // namespace ditask::detail
