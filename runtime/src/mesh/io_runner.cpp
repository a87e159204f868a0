// SPDX-License-Identifier: MIT
#include "io_runner.hpp"

#include <algorithm>
#include <utility>

namespace ditask::detail::mesh {

namespace {
// A waiter runs in slices: an answer completed by another thread (a timeout, a node that left,
// a stop) is seen within one.
constexpr std::chrono::steady_clock::duration kWaiterSlice = std::chrono::milliseconds(2);
// The runner a waiter on this thread last ran: its posts wait for its next wait.
thread_local const IoRunner* t_waiter_of = nullptr;
}  // namespace

bool IoRunner::run_one(std::chrono::steady_clock::duration slice) {
  try {
    if (slice == std::chrono::steady_clock::duration::zero()) {
      return io_.run_one() != 0;  // 0: stopped (or out of work, which only shutdown makes)
    }
    io_.run_one_for(slice);
  } catch (const std::exception& e) {
    on_error_(e);
  }
  return !io_.stopped();
}

bool IoRunner::let_go_locked() {
  runner_ = Runner::none;
  let_go_.store(true, std::memory_order_seq_cst);
  if (pending_.exchange(false, std::memory_order_seq_cst)) {
    wanted_ = true;  // posted while this thread ran it: the io thread runs it now
  }
  for (auto* word : sleeping_) {
    word->wake_all();  // under the lock: a waiter unregisters its word under it before it goes
  }
  return wanted_;
}

std::vector<std::shared_ptr<HeldWrite>> IoRunner::take_locked(Runner who) {
  runner_ = who;
  let_go_.store(false, std::memory_order_seq_cst);
  wanted_ = false;
  return std::exchange(deferred_, {});
}

void IoRunner::write_deferred(std::vector<std::shared_ptr<HeldWrite>>& writes) noexcept {
  for (auto& link : writes) {
    link->write_held();
  }
  writes.clear();
}

bool IoRunner::defers_here() const noexcept {
  return t_waiter_of == this && !io_.get_executor().running_in_this_thread();
}

bool IoRunner::defer_write(std::shared_ptr<HeldWrite> link) {
  std::lock_guard lock(mutex_);
  if (runner_ != Runner::none) {
    return false;
  }
  deferred_.push_back(std::move(link));
  return true;
}

void IoRunner::want() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (runner_ != Runner::none || wanted_) {
      return;  // run by a thread now (or the io thread is on its way)
    }
    wanted_ = true;
  }
  changed_.notify_one();
}

void IoRunner::posted() noexcept {
  if (t_waiter_of == this || io_.get_executor().running_in_this_thread()) {
    return;
  }
  pending_.store(true, std::memory_order_seq_cst);
  if (!let_go_.load(std::memory_order_seq_cst)) {
    return;  // a runner sees pending_ when it lets go (Asio's post woke it if it slept)
  }
  {
    std::lock_guard lock(mutex_);
    if (runner_ != Runner::none) {
      return;
    }
    pending_.store(false, std::memory_order_relaxed);
    wanted_ = true;
  }
  changed_.notify_one();
}

void IoRunner::io_thread_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    auto deferred = take_locked(Runner::io);
    offered_.store(false, std::memory_order_relaxed);
    lock.unlock();
    write_deferred(deferred);
    bool running = true;
    while (running && !offered_.exchange(false, std::memory_order_relaxed)) {
      running = run_one(std::chrono::steady_clock::duration::zero());
    }
    lock.lock();
    let_go_locked();
    // Taken back when another thread posted work, or after a whole idle period in which no
    // waiter began or ended a run. Once stopped there is nothing left to run: the thread ends (a
    // waiter that runs it leaves at once).
    for (;;) {
      if (!running || io_.stopped()) {
        return;
      }
      if (runner_ == Runner::none && wanted_) {
        break;
      }
      const std::uint64_t seen = turns_;
      changed_.wait_for(lock, idle_);
      if (runner_ == Runner::none && turns_ == seen) {
        break;  // (wanted_ and a stop are seen at the top)
      }
    }
  }
}

void IoRunner::run_until(const std::function<bool()>& done,
                         std::chrono::steady_clock::time_point deadline) {
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline ||
        !run_one(std::min<std::chrono::steady_clock::duration>(deadline - now, kWaiterSlice))) {
      return;
    }
  }
}

bool IoRunner::wait_running_io(const std::function<bool()>& done, WakeWord& word,
                               std::atomic<bool>& would_run,
                               std::chrono::steady_clock::time_point deadline, Then then) {
  for (;;) {
    if (done()) {
      return true;
    }
    bool run = false;
    std::uint32_t seen = 0;
    std::vector<std::shared_ptr<HeldWrite>> deferred;
    {
      std::lock_guard lock(mutex_);
      if (runner_ == Runner::none && !io_.stopped()) {
        deferred = take_locked(Runner::waiter);
        ++turns_;
        run = true;
      } else {
        seen = word.value();  // before it is registered: a wake from let_go_locked() moves it after
        sleeping_.push_back(&word);
      }
    }
    if (run) {
      write_deferred(deferred);  // this thread's own calls made since its last wait, in one write
      t_waiter_of = this;
      run_until(done, deadline);
      if (then == Then::runs_jobs) {
        t_waiter_of = nullptr;  // its posts from its jobs bring the io thread back
      }
      offered_.store(false, std::memory_order_relaxed);  // what it offered, it offered to itself
      bool wake_io = false;
      {
        std::lock_guard lock(mutex_);
        ++turns_;
        wake_io = let_go_locked();
      }
      if (wake_io) {
        changed_.notify_one();
      }
    } else {
      would_run.store(true, std::memory_order_relaxed);
      const bool in_time = done() || word.wait(seen, deadline);
      {
        std::lock_guard lock(mutex_);
        sleeping_.erase(std::find(sleeping_.begin(), sleeping_.end(), &word));
      }
      if (!in_time && !done()) {
        return false;
      }
      continue;
    }
    if (done()) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
  }
}

void IoRunner::stopped() {
  std::vector<std::shared_ptr<HeldWrite>> dropped;  // nothing runs them now: let their links go
  {
    std::lock_guard lock(mutex_);  // the io thread is in its wait or sees the stop before it
    dropped.swap(deferred_);
  }
  changed_.notify_one();
}

std::size_t IoRunner::sleeping() const {
  std::lock_guard lock(mutex_);
  return sleeping_.size();
}

}  // namespace ditask::detail::mesh
