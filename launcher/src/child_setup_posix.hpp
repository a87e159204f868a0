// SPDX-License-Identifier: MIT
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>

#include "process_v2.hpp"

namespace ditask::launcher {

/// The fd a worker finds its pre-bound listening socket on (announced as DITASK_LISTEN_FD).
inline constexpr int kListenFd = 3;

/// Boost.Process v2 initializer for a worker child: its own process group, a parent-death
/// SIGKILL (re-checking the parent afterwards, as the parent may already be gone), default
/// signal dispositions, and the listening socket at kListenFd. Runs between fork and exec:
/// async-signal-safe calls only.
struct ChildSetup {
  pid_t launcher_pid;
  int listen_fd;  // -1: none

  template <class Launcher>
  boost::system::error_code on_setup(Launcher& launcher, const std::filesystem::path&,
                                     const char* const*) {
    if (listen_fd >= 0) {
      launcher.fd_whitelist.push_back(kListenFd);
    }
    return {};
  }

  template <class Launcher>
  boost::system::error_code on_exec_setup(Launcher&, const std::filesystem::path&,
                                          const char* const*) {
    // Own group: the launcher signals workers as groups, and Ctrl-C reaches the launcher once.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != launcher_pid) {
      ::raise(SIGKILL);  // the launcher died before the death signal was armed
    }
    // Ignored dispositions survive exec; workers start with the defaults.
    ::signal(SIGHUP, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (listen_fd == kListenFd) {
      ::fcntl(kListenFd, F_SETFD, 0);
    } else if (listen_fd >= 0 && ::dup2(listen_fd, kListenFd) < 0) {
      return {errno, boost::system::system_category()};
    }
    return {};
  }

  template <class Launcher>
  void on_exec_error(Launcher&, const std::filesystem::path& exe, const char* const*,
                     const boost::system::error_code&) {
    // Between fork and exit: write(2) only. The launcher reports the exit code 1 it causes.
    static constexpr char kPrefix[] = "ditask: error: cannot execute ";
    ::write(STDERR_FILENO, kPrefix, sizeof kPrefix - 1);
    ::write(STDERR_FILENO, exe.c_str(), std::strlen(exe.c_str()));
    ::write(STDERR_FILENO, "\n", 1);
  }
};

}  // namespace ditask::launcher
