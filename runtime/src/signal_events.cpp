// SPDX-License-Identifier: MIT
#include "signal_events.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "ditask/runtime/log.hpp"
#include "ditask/task.hpp"
#include "internal_access.hpp"
#include "signal_copies.hpp"
#include "start_hook.hpp"
#include "transport/transport.hpp"
#include "trace/trace.hpp"
#include "worker_stats.hpp"

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
// SIGTERMs are counted by sender (signal_copies.hpp), as the copies of a Slurm step's signal
// make one event.
std::atomic<int> g_terms_from_step{0};
std::atomic<int> g_terms_from_launcher{0};
std::atomic<int> g_terms_from_others{0};
std::atomic<pid_t> g_launcher_pid{0};
std::atomic<pid_t> g_step_daemon_pid{0};
std::atomic<pthread_t> g_signal_thread{};
std::atomic<bool> g_thread_running{false};

SignalSender sender_of(const siginfo_t* info) noexcept {
  const bool sent = info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE);
  return classify_sender(sent ? info->si_pid : 0, g_launcher_pid.load(), g_step_daemon_pid.load());
}

void take_default_term() noexcept {
  ::signal(SIGTERM, SIG_DFL);
  ::raise(SIGTERM);
}

// Async-signal-safe: counts, then wakes the signal thread, which decides (it may read the task);
// without that thread (no task yet) SIGTERM does what it always does.
void on_term(int, siginfo_t* info, void*) {
  if (!g_thread_running.load()) {
    take_default_term();
    return;
  }
  switch (sender_of(info)) {
    case SignalSender::step_daemon:
      g_terms_from_step.fetch_add(1);
      break;
    case SignalSender::launcher:
      g_terms_from_launcher.fetch_add(1);
      break;
    case SignalSender::other:
      g_terms_from_others.fetch_add(1);
      break;
  }
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
    try {
      // The launcher's --summary-json still counts this worker: its last counters, after which
      // the transport no longer counts or warns about losses, so the log says what they say.
      const auto transport = RouterAccess::transport(t.router());
      write_worker_stats(transport ? transport->final_stats() : TransportStats{});
    } catch (...) {
      // The counters could not be copied: the summary shows none for this worker.
    }
    trace::flush_now();  // and its --trace has what it recorded
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
  term.sa_sigaction = on_term;
  sigemptyset(&term.sa_mask);
  term.sa_flags = SA_RESTART | SA_SIGINFO;
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

pid_t step_daemon_of(pid_t launcher) {
  const char* step = std::getenv("SLURM_STEP_ID");
  if (step == nullptr || *step == '\0' || launcher <= 0) {
    return 0;
  }
  // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so read after the last ')'.
  std::ifstream stat("/proc/" + std::to_string(launcher) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) {
    return 0;
  }
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  pid_t parent = 0;
  if (!(rest >> state >> parent) || parent <= 1) {
    return 0;
  }
  std::ifstream comm("/proc/" + std::to_string(parent) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name == "slurmstepd" ? parent : 0;
}

void SignalEvents::start() {
  if (const char* launcher = std::getenv("DITASK_LAUNCHER_PID")) {
    const pid_t pid = static_cast<pid_t>(std::atoll(launcher));
    g_launcher_pid = pid;
    g_step_daemon_pid = step_daemon_of(pid);
  }
  thread_ = std::thread([this] { loop(); });
  g_signal_thread = thread_.native_handle();
  g_thread_running = true;
}

void SignalEvents::loop() {
  const sigset_t set = user_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // sigwait needs them blocked in this thread
  SignalCopies terms;
  SignalCopies usr1;
  SignalCopies usr2;
  for (;;) {
    siginfo_t info{};
    const int sig = sigwaitinfo(&set, &info);
    if (sig < 0) {
      continue;
    }
    if (stopping_) {
      return;
    }
    if (sig == wake_signal()) {
      const int from_step = g_terms_from_step.exchange(0);
      const int from_launcher = g_terms_from_launcher.exchange(0);
      const int from_others = g_terms_from_others.exchange(0);
      for (auto n = terms.add(from_step, from_launcher, from_others); n > 0; --n) {
        deliver_term();
      }
      continue;
    }
    auto& copies = sig == SIGUSR1 ? usr1 : usr2;
    const auto sender = sender_of(&info);
    const auto events = copies.add(sender == SignalSender::step_daemon ? 1 : 0, sender == SignalSender::launcher ? 1 : 0,
                                   sender == SignalSender::other ? 1 : 0);
    if (events == 0) {
      DITASK_LOG(debug, "worker") << "a second copy of " << (sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2")
                                  << " (from Slurm and from the launcher): one event";
    }
    for (auto n = events; n > 0; --n) {
      deliver(sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
    }
  }
}

}  // namespace ditask::detail
