// SPDX-License-Identifier: MIT
// Where served calls run: one thread per caller (FIFO per caller) and an elastic pool for
// concurrent functions and Future continuations.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../wake_word.hpp"

namespace ditask::detail {

/// Runs jobs on threads started on demand (an idle one is reused), at most `max_threads` at
/// once; more jobs wait in FIFO order. Thread: any; stop() not from one of its jobs.
class ElasticPool {
 public:
  explicit ElasticPool(std::size_t max_threads) : max_threads_(max_threads) {}
  ~ElasticPool() { stop(); }
  ElasticPool(const ElasticPool&) = delete;
  ElasticPool& operator=(const ElasticPool&) = delete;
  /// Queues `job`; false once stopped (the job is dropped).
  bool submit(std::function<void()> job);
  /// Runs what is queued, then joins every thread. Idempotent.
  void stop() noexcept;

 private:
  void loop();

  const std::size_t max_threads_;
  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::function<void()>> jobs_;  // guarded by mutex_
  std::size_t idle_ = 0;                    // guarded by mutex_
  bool stopping_ = false;                   // guarded by mutex_
  std::vector<std::thread> threads_;        // guarded by mutex_
};

/// How a KeyedQueues job is called.
enum class Turn {
  more,     ///< run it; another job of its key waits behind it
  last,     ///< run it; nothing of its key waits behind it
  refused,  ///< do not run it: the queues stopped before its turn (answer that at once)
};

/// One thread per key (the calling node) running that key's jobs in order. Thread: any;
/// stop() not from one of its jobs.
class KeyedQueues {
 public:
  KeyedQueues() = default;
  ~KeyedQueues() { stop(); }
  KeyedQueues(const KeyedQueues&) = delete;
  KeyedQueues& operator=(const KeyedQueues&) = delete;
  /// A job, called once: with Turn::more or Turn::last to run, or Turn::refused.
  using Job = std::function<void(Turn)>;
  /// Queues `job` behind the jobs of `key` (starting its thread on first use); false once
  /// stopped.
  bool submit(std::int64_t key, Job job);
  /// Queues `jobs` in order behind the jobs of `key` under one lock and one wake-up (a batch
  /// read at once); `jobs` is left empty. False once stopped (the jobs are dropped).
  bool submit(std::int64_t key, std::vector<Job>& jobs);
  /// Calls every job not begun yet with Turn::refused, on this thread and at once (jobs that
  /// run go on: a queue's thread ends after its running job), then joins every thread.
  /// Idempotent.
  void stop() noexcept;
  /// True when `key` has no job queued or running (its thread sleeps, or it has none, or its
  /// last job taken said it was done with answered()): a job run now elsewhere keeps the key's
  /// order, as long as only this caller submits for `key`.
  bool idle(std::int64_t key) const;
  /// The job this thread runs for its key has done its part for the key's order (a served call
  /// handed its answer over): from now the key counts as idle if no job waits behind it. A
  /// thread that runs no key's jobs: nothing. No lock (it is on every queued call's answer).
  static void answered() noexcept;
  /// True once stop() began (a job can refuse to do its work).
  bool stopping() const noexcept;

  /// How an idle key's thread may run the transport's io work while it waits for jobs, so that
  /// the calls it reads itself run on it with no hand-over. `wait(done, word, would_run)` waits
  /// until done() (jobs came, or a stop: `word` moved) and returns false when it cannot run the
  /// io work (then the thread sleeps as before); `offer()` asks the thread now running the io
  /// work to let it go (a woken key's thread would run it next).
  struct IoTurn {
    std::function<bool(const std::function<bool()>& done, WakeWord& word,
                       std::atomic<bool>& would_run)>
        wait;
    std::function<void()> offer;
  };
  /// Set before the first submit(). At most one key's thread runs the io work at a time.
  void set_io_turn(IoTurn turn) { io_turn_ = std::move(turn); }

 private:
  // A key's thread takes all queued jobs in one swap (one lock for a batch, not one per job) and
  // claims them one at a time through `next`, which stop() claims too: a job taken but not
  // begun is still refused at once.
  struct Queue {
    std::vector<Job> jobs;                // guarded by the owner's mutex_: queued, not taken
    std::atomic<std::size_t> queued{0};   // jobs.size(), read without the lock
    std::vector<Job> taken;               // written under the owner's mutex_; element i by whoever claimed it
    std::size_t taken_count = 0;          // taken.size(): written by its thread under the owner's mutex_
    std::atomic<std::size_t> next{0};     // the next index of taken to claim (its thread, or stop())
    bool waiting = false;                 // guarded by the owner's mutex_: its thread sleeps
    // The job last claimed answered (set by that job; cleared by its thread before it claims the
    // next, so a reader that sees a claim made after it sees it cleared).
    std::atomic<bool> answered{false};
    WakeWord wake;                        // its thread's wake-up
    std::atomic<bool> would_run{false};   // its thread sleeps in IoTurn::wait, which would run the io work
    std::thread thread;
  };
  void loop(Queue& queue);
  // Waits for `queue`'s next jobs running the io work (IoTurn); false when it did not (another
  // key's thread is the one that may, or the transport cannot).
  bool wait_running_io(Queue& queue, std::uint32_t seen);
  // Appends `jobs` to `key`'s queue; returns the queue whose sleeping thread the caller must wake
  // after unlocking, or null. Caller holds mutex_.
  Queue* append_locked(std::int64_t key, std::vector<Job>& jobs);

  mutable std::mutex mutex_;
  std::map<std::int64_t, std::unique_ptr<Queue>> queues_;  // guarded by mutex_
  bool stopping_ = false;                                  // guarded by mutex_
  IoTurn io_turn_;                                         // fixed before the first submit
  std::atomic<bool> io_candidate_{false};                  // a key's thread is in io_turn_.wait
};

}  // namespace ditask::detail
