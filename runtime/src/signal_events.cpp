// SPDX-License-Identifier: MIT
#include "signal_events.hpp"

#include <pthread.h>
#include <signal.h>

#include "ditask/runtime/log.hpp"
#include "ditask/task.hpp"
#include "internal_access.hpp"
#include "start_hook.hpp"

namespace ditask::detail {
namespace {

/// What the SIGTERM handler wakes the signal thread with (blocked everywhere, like USR1/USR2).
int wake_signal() { return SIGRTMIN; }

sigset_t user_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  sigaddset(&set, wake_signal());
  return set;
}

// Set by the SIGTERM handler, read by the signal thread. Lock-free atomics: async-signal-safe.
std::atomic<int> g_terms{0};
std::atomic<pthread_t> g_signal_thread{};
std::atomic<bool> g_thread_running{false};

void take_default_term() noexcept {
  ::signal(SIGTERM, SIG_DFL);
  ::raise(SIGTERM);
}

// Async-signal-safe: counts, then wakes the signal thread, which decides (it may read the task);
// without that thread (no task yet) SIGTERM does what it always does.
void on_term(int) {
  if (!g_thread_running.load()) {
    take_default_term();
    return;
  }
  g_terms.fetch_add(1);
  ::pthread_kill(g_signal_thread.load(), wake_signal());
}

// Children forked by the module (tools, subprocess libraries) start with default signal
// handling, not with our mask. posix_spawn() skips fork handlers: such callers reset it themselves.
void unblock_user_signals() noexcept {
  const sigset_t set = user_signals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::signal(SIGTERM, SIG_DFL);
}

void deliver(const char* name) noexcept {
  try {
    auto& t = task();
    if (!t.running()) {
      DITASK_LOG(info, "worker") << "received " << name << " while the task is not running";
      return;
    }
    TaskAccess::post_local(t, name);
    DITASK_LOG(info, "worker") << "received " << name << ": emitted local event '" << name << "'";
  } catch (const std::exception& e) {
    DITASK_LOG(warn, "worker") << "received " << name << " but could not emit it: " << e.what();
  }
}

// SIGTERM for a module that handles it: the event, and finish() so a run() loop ends.
void deliver_term() noexcept {
  auto& t = task();
  bool wanted = false;
  try {
    wanted = t.running() && TaskAccess::handler_count(t, "SIGTERM") > 0;
  } catch (...) {
  }
  if (!wanted) {
    take_default_term();
    return;
  }
  t.set_finish();
  deliver("SIGTERM");
}

}  // namespace

void block_user_signals() noexcept {
  const sigset_t set = user_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  struct sigaction term {};
  term.sa_handler = on_term;
  sigemptyset(&term.sa_mask);
  term.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &term, nullptr);
  static const int registered = pthread_atfork(nullptr, nullptr, &unblock_user_signals);
  static_cast<void>(registered);
}

SignalEvents::SignalEvents() {
  detail::set_start_hook([this] { std::call_once(started_, [this] { start(); }); });
}

SignalEvents::~SignalEvents() {
  detail::set_start_hook({});
  if (thread_.joinable()) {
    g_thread_running = false;
    stopping_ = true;
    pthread_kill(thread_.native_handle(), SIGUSR1);
    thread_.join();
  }
}

void SignalEvents::start() {
  thread_ = std::thread([this] { loop(); });
  g_signal_thread = thread_.native_handle();
  g_thread_running = true;
}

void SignalEvents::loop() {
  const sigset_t set = user_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // sigwait needs them blocked in this thread
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) {
      continue;
    }
    if (stopping_) {
      return;
    }
    if (sig == wake_signal()) {
      for (int n = g_terms.exchange(0); n > 0; --n) {
        deliver_term();
      }
      continue;
    }
    deliver(sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
  }
}

}  // namespace ditask::detail
