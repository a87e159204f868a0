// SPDX-License-Identifier: MIT
#include "executors.hpp"

#include "../trace/trace.hpp"

#include <limits>

#include "../batch_thread.hpp"
#include "../transport/inline_write.hpp"

namespace ditask::detail {

namespace {
// The answered flag of the queue whose jobs this thread runs (KeyedQueues::answered()), or null.
thread_local std::atomic<bool>* t_answered = nullptr;
// What stop() leaves in a queue's `next`: far past any batch, and still so after the claims
// its thread may make before it sees the stop.
constexpr std::size_t kClaimedByStop = std::numeric_limits<std::size_t>::max() / 2;
}  // namespace

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
    wake->wake.wake_all();  // only a sleeping thread is woken: a busy one finds the jobs itself
    if (wake->would_run.exchange(false, std::memory_order_relaxed) && io_turn_.offer) {
      io_turn_.offer();  // it reads the next calls itself once these ran
    }
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
  if (queue.jobs.empty()) {
    queue.jobs.swap(jobs);
  } else {
    for (auto& job : jobs) {
      queue.jobs.push_back(std::move(job));
    }
  }
  jobs.clear();
  queue.queued.store(queue.jobs.size(), std::memory_order_release);
  if (fresh) {
    queue.thread = std::thread([this, q = &queue] {
      become_batch_thread();
      trace::name_thread("rpc queue");
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
  t_answered = &queue.answered;
  std::unique_lock lock(mutex_);
  for (;;) {
    while (!stopping_ && queue.jobs.empty()) {
      queue.waiting = true;
      const std::uint32_t seen = queue.wake.value();
      lock.unlock();
      if (!wait_running_io(queue, seen)) {
        queue.wake.wait(seen, std::chrono::steady_clock::time_point::max());
      }
      lock.lock();
    }
    queue.waiting = false;
    if (queue.jobs.empty()) {
      return;  // stopping, and nothing left
    }
    queue.taken.clear();
    queue.taken.swap(queue.jobs);
    queue.queued.store(0, std::memory_order_release);
    queue.taken_count = queue.taken.size();
    queue.next.store(0, std::memory_order_relaxed);
    queue.answered.store(false, std::memory_order_relaxed);  // under the lock, as idle() reads
    lock.unlock();
    for (;;) {
      if (queue.next.load(std::memory_order_acquire) >= queue.taken_count) {
        break;  // all run (the last one's answered stays: the key is idle), or stop() claimed them
      }
      queue.answered.store(false, std::memory_order_seq_cst);  // before the claim (idle())
      const std::size_t i = queue.next.fetch_add(1, std::memory_order_seq_cst);
      if (i >= queue.taken_count) {
        break;  // stop() claimed the rest
      }
      Job job = std::move(queue.taken[i]);
      const bool last = i + 1 == queue.taken_count && queue.queued.load(std::memory_order_acquire) == 0;
      job(last ? Turn::last : Turn::more);
      job = nullptr;  // what it captured goes before the next wait
    }
    release_held_writes();  // a batch that stop() cut short ended on a job with more behind it
    lock.lock();
  }
}

bool KeyedQueues::wait_running_io(Queue& queue, std::uint32_t seen) {
  if (!io_turn_.wait || io_candidate_.exchange(true, std::memory_order_acq_rel)) {
    return false;
  }
  queue.would_run.store(false, std::memory_order_relaxed);
  const bool ran = io_turn_.wait([&] { return queue.wake.value() != seen; }, queue.wake, queue.would_run);
  queue.would_run.store(false, std::memory_order_relaxed);
  io_candidate_.store(false, std::memory_order_release);
  return ran;
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
      // Taken but not claimed by its thread: claimed here (the thread's next claim finds none).
      const std::size_t from = q->next.exchange(kClaimedByStop, std::memory_order_acq_rel);
      for (std::size_t i = from; i < q->taken_count; ++i) {
        refused.push_back(std::move(q->taken[i]));
      }
      for (auto& job : q->jobs) {
        refused.push_back(std::move(job));
      }
      q->jobs.clear();
      q->queued.store(0, std::memory_order_release);
    }
  }
  for (auto* q : queues) {
    q->wake.wake_all();
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

bool KeyedQueues::idle(std::int64_t key) const {
  std::lock_guard lock(mutex_);
  auto it = queues_.find(key);
  if (it == queues_.end()) {
    return true;
  }
  const Queue& q = *it->second;
  // The claim first: one made after the last answered() comes with answered cleared.
  const std::size_t claimed = q.next.load(std::memory_order_seq_cst);
  const bool answered = q.answered.load(std::memory_order_seq_cst);
  return q.jobs.empty() && (q.waiting || (answered && claimed >= q.taken_count));
}

void KeyedQueues::answered() noexcept {
  if (t_answered != nullptr) {
    t_answered->store(true, std::memory_order_seq_cst);
  }
}

bool KeyedQueues::stopping() const noexcept {
  std::lock_guard lock(mutex_);
  return stopping_;
}

}  // namespace ditask::detail
