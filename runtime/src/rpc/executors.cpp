// SPDX-License-Identifier: MIT
#include "executors.hpp"

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
  std::unique_lock lock(mutex_);
  if (stopping_) {
    return false;
  }
  auto& slot = queues_[key];
  if (!slot) {
    slot = std::make_unique<Queue>();
    slot->jobs.push_back(std::move(job));
    slot->thread = std::thread([this, q = slot.get()] { loop(*q); });
    return true;
  }
  Queue& queue = *slot;
  queue.jobs.push_back(std::move(job));
  if (queue.waiting) {
    queue.waiting = false;
    lock.unlock();
    queue.queued.notify_one();  // only a sleeping thread is woken: a busy one finds the job itself
  }
  return true;
}

void KeyedQueues::loop(Queue& queue) {
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
    const bool last = queue.jobs.empty();
    lock.unlock();
    job(last);
    job = nullptr;
    lock.lock();
  }
}

void KeyedQueues::stop() noexcept {
  // Each thread ends once its queue is empty; queues_ keeps its shape while stopping (submit
  // refuses), so the threads can be joined without the lock.
  std::vector<Queue*> queues;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [key, q] : queues_) {
      queues.push_back(q.get());
    }
  }
  for (auto* q : queues) {
    q->queued.notify_all();
  }
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
