// SPDX-License-Identifier: MIT
// Who runs a mesh's io_context: its io thread, or a thread waiting for a remote call's answer,
// which then reads (and writes) for itself. docs/design.md "Threading in a worker".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "../transport/inline_write.hpp"
#include "../wake_word.hpp"

namespace ditask::detail::mesh {

/// One io_context, run by one thread at a time: the io thread, or a thread waiting for an answer
/// (wait_running_io()). The io thread lets go only after it woke such a waiter (offer()), so a
/// thread that calls in a loop reads its answers and writes its next calls itself, with no
/// hand-over between threads. Whoever lets go wakes the waiters sleeping meanwhile (one of them
/// takes over). The io thread takes the io_context back at once when another thread posts work
/// (posted()), and otherwise once a whole idle period passed with no waiter's run begun or ended:
/// what arrives while the caller does other work waits at most about two periods.
/// Thread: io_thread_loop() on the io thread; the rest from any thread.
class IoRunner {
 public:
  /// How long a let-go io_context may stay unrun before the io thread takes it back (the mesh's).
  static constexpr std::chrono::microseconds kIdle{250};

  /// `on_error`: a handler's exception (logged; the io_context keeps running). `idle`: as kIdle.
  IoRunner(boost::asio::io_context& io, std::function<void(const std::exception&)> on_error,
           std::chrono::microseconds idle = kIdle)
      : io_(io), on_error_(std::move(on_error)), idle_(idle) {}

  /// The io thread's body: runs the io_context until it is stopped.
  void io_thread_loop();
  /// Waits until `done()` (true) or `deadline` (false): runs the io_context on this thread
  /// whenever no other thread does, else sleeps on `word` (the waker moves it after `done()`
  /// turned true) with `would_run` set, so that its waker lets the io_context go. `then`: whether
  /// this thread's later posts wait for its next wait (a caller that calls again) or bring the io
  /// thread back when no one runs the io_context (a thread that runs jobs next).
  enum class Then : std::uint8_t { waits_again, runs_jobs };
  bool wait_running_io(const std::function<bool()>& done, WakeWord& word,
                       std::atomic<bool>& would_run,
                       std::chrono::steady_clock::time_point deadline, Then then);
  /// Lets the io_context go after the current handler: it woke a waiter that would run it.
  /// Thread: the one running the io_context.
  void offer() noexcept { offered_.store(true, std::memory_order_relaxed); }
  /// Wakes the io thread to see that the io_context stopped. Any thread, after io_context::stop().
  void stopped();
  /// After a post to the io_context: when no thread runs it, the io thread takes it back to run
  /// what was posted, unless the posting thread is the waiter it was let go to (its own sends go
  /// out at its next wait) or runs it now. Any thread.
  void posted() noexcept;
  /// When no thread runs the io_context now, the io thread takes it back at once: the caller,
  /// which may have run it last, is about to run something long (a served call that is not
  /// quick), and what arrives meanwhile must not wait for its next wait. Any thread.
  void want() noexcept;
  /// Whether a write asked for on this thread may wait for the thread that next runs the
  /// io_context instead of being posted to it (defer_write()): this thread is the waiter it was
  /// let go to, will wait again, and does not run it now. No lock. Any thread.
  bool defers_here() const noexcept;
  /// Puts off `link`'s write until a thread takes the io_context (the waiter's next wait, or the
  /// io thread taking it back), which writes it inline first: no posted handler, so its run does
  /// not poll the reactor before the write. False when a thread runs the io_context now (post
  /// the write instead). Any thread (one that defers_here()).
  bool defer_write(std::shared_ptr<HeldWrite> link);
  /// Waiters sleeping now (while another thread runs the io_context). For tests.
  std::size_t sleeping() const;

 private:
  enum class Runner : std::uint8_t { none, io, waiter };
  // Runs one handler (or waits up to `slice` for one when it is set); false once stopped.
  bool run_one(std::chrono::steady_clock::duration slice);
  // Runs until `done()`, `deadline` or a stop. Caller took the runner's role.
  void run_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline);
  // Lets the io_context go and wakes the sleeping waiters; true when the io thread should take it
  // back now (work was posted meanwhile). Caller holds mutex_.
  bool let_go_locked();
  // `who` runs the io_context from now; returns the writes deferred until then (the caller
  // writes them, unlocked, before it runs anything). Caller holds mutex_.
  std::vector<std::shared_ptr<HeldWrite>> take_locked(Runner who);
  // Writes what take_locked() returned.
  static void write_deferred(std::vector<std::shared_ptr<HeldWrite>>& writes) noexcept;

  boost::asio::io_context& io_;
  const std::function<void(const std::exception&)> on_error_;
  const std::chrono::microseconds idle_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // the io thread waits on it while it does not run
  Runner runner_ = Runner::io;       // guarded by mutex_
  std::uint64_t turns_ = 0;          // guarded by mutex_: waiters' runs begun and ended
  std::vector<WakeWord*> sleeping_;  // guarded by mutex_: waiters sleeping while another runs
  bool wanted_ = false;              // guarded by mutex_: work was posted while no one ran it
  std::vector<std::shared_ptr<HeldWrite>> deferred_;  // guarded by mutex_: defer_write()
  std::atomic<bool> offered_{false};
  // Set with runner_ (seq_cst with pending_): no thread runs the io_context.
  std::atomic<bool> let_go_{false};
  // Another thread posted work since the runner last looked (seq_cst with let_go_).
  std::atomic<bool> pending_{false};
};

}  // namespace ditask::detail::mesh
