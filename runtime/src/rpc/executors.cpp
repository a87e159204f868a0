// SPDX-License-Identifier: MIT
#include "executors.hpp"

#include "../batch_thread.hpp"

namespace ditask::detail {

bool ElasticPool::submit(std::function<void()> job) {
  std::lock_guard lock(mutex_);
  if (stopping_) {
    return false;
  }
  jobs_.push_back(std::move(job));
  if (idle_ > 0 || threads_.size() >= max_threads_) {
    queued_.notify_one();
  } else {
    threads_.emplace_back([this] { loop(); });
  }
  return true;
}

void ElasticPool::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (jobs_.empty()) {
      if (stopping_) {
        return;
      }
      ++idle_;
      queued_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      --idle_;
      continue;
    }
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // what it captured goes before the next wait
    lock.lock();
  }
}

void ElasticPool::stop() noexcept {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
  }
  queued_.notify_all();
  for (auto& t : threads) {
    t.join();
  }
}

bool KeyedQueues::submit(std::int64_t key, Job job) {
  std::vector<Job> one;
  one.push_back(std::move(job));
  return submit(key, one);
}

bool KeyedQueues::submit(std::int64_t key, std::vector<Job>& jobs) {
  std::unique_lock lock(mutex_);
  if (stopping_) {
    jobs.clear();
    return false;
  }
  Queue* wake = append_locked(key, jobs);
  lock.unlock();
  if (wake != nullptr) {
    wake->queued.notify_one();  // only a sleeping thread is woken: a busy one finds the jobs itself
  }
  return true;
}

KeyedQueues::Queue* KeyedQueues::append_locked(std::int64_t key, std::vector<Job>& jobs) {
  auto& slot = queues_[key];
  const bool fresh = !slot;
  if (fresh) {
    slot = std::make_unique<Queue>();
  }
  Queue& queue = *slot;
  for (auto& job : jobs) {
    queue.jobs.push_back(std::move(job));
  }
  jobs.clear();
  if (fresh) {
    queue.thread = std::thread([this, q = &queue] {
      become_batch_thread();
      loop(*q);
    });
    return nullptr;
  }
  if (!queue.waiting) {
    return nullptr;
  }
  queue.waiting = false;
  return &queue;
}

void KeyedQueues::loop(Queue& queue) {
  // One job at a time under the lock, not a batch taken at once: a job not begun stays in the
  // queue, where stop() can refuse it while the one before it still runs.
  std::unique_lock lock(mutex_);
  for (;;) {
    while (!stopping_ && queue.jobs.empty()) {
      queue.waiting = true;
      queue.queued.wait(lock);
    }
    queue.waiting = false;
    if (queue.jobs.empty()) {
      return;  // stopping, and nothing left
    }
    auto job = std::move(queue.jobs.front());
    queue.jobs.pop_front();
    const Turn turn = queue.jobs.empty() ? Turn::last : Turn::more;
    lock.unlock();
    job(turn);
    job = nullptr;  // what it captured goes before the next wait
    lock.lock();
  }
}

void KeyedQueues::stop() noexcept {
  // Each thread ends once its queue is empty; queues_ keeps its shape while stopping (submit
  // refuses), so the threads can be joined without the lock.
  std::vector<Queue*> queues;
  std::vector<Job> refused;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [key, q] : queues_) {
      queues.push_back(q.get());
      for (auto& job : q->jobs) {
        refused.push_back(std::move(job));
      }
      q->jobs.clear();
    }
  }
  for (auto* q : queues) {
    q->queued.notify_all();
  }
  for (auto& job : refused) {
    job(Turn::refused);
  }
  refused.clear();
  for (auto* q : queues) {
    if (q->thread.joinable()) {
      q->thread.join();
    }
  }
}

bool KeyedQueues::stopping() const noexcept {
  std::lock_guard lock(mutex_);
  return stopping_;
}

}  // namespace ditask::detail
