// SPDX-License-Identifier: MIT
// Signals in a worker (docs/launcher.md "Signals"): SIGUSR1/SIGUSR2 (Slurm's "time is
// nearly up") never kill, they become the local events "SIGUSR1"/"SIGUSR2"; SIGTERM keeps its
// default meaning unless the module asked for it with a handler of the local event "SIGTERM":
// then it becomes that event and sets finish() (run() ends after its step), so the module can stop
// gracefully, its task broadcasting `finish` to the peers.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace ditask::detail {

/// Blocks SIGUSR1, SIGUSR2 and the wake-up signal in the calling thread (every later thread
/// inherits it) and installs the SIGTERM handler. Call from the main thread before any other
/// thread exists. Children forked later get the mask undone.
void block_user_signals() noexcept;

/// The signal thread: started when the task first starts (a signal that comes earlier stays
/// pending until then; a SIGTERM before it takes its default action). Thread: one own thread,
/// blocked in sigwait(); the destructor wakes and joins it.
class SignalEvents {
 public:
  SignalEvents();
  ~SignalEvents();
  SignalEvents(const SignalEvents&) = delete;
  SignalEvents& operator=(const SignalEvents&) = delete;

 private:
  void start();
  void loop();

  std::atomic<bool> stopping_{false};
  std::once_flag started_;
  std::thread thread_;
};

}  // namespace ditask::detail
