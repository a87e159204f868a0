// SPDX-License-Identifier: MIT
#include "ditask/launcher/group_signal.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ditask/runtime/log.hpp"

namespace ditask::launcher {

SignalResult signal_group(pid_t pgid, int sig) noexcept {
  if (pgid <= 1 || pgid == ::getpgrp()) {
    try {
      DITASK_LOG(error, "launcher") << "refusing to send " << signal_name(sig)
                                    << " to process group " << pgid << " (not a worker group)";
    } catch (...) {
      // Refusing matters more than saying so.
    }
    return SignalResult::refused;
  }
  if (::kill(-pgid, sig) == 0) {
    return SignalResult::sent;
  }
  return errno == ESRCH ? SignalResult::gone : SignalResult::failed;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string signal_hint(int sig) {
  switch (sig) {
    case SIGKILL: return "killed by SIGKILL: out of memory? (check dmesg or the cgroup's memory.events)";
    case SIGSEGV: return "a segmentation fault: an invalid memory access in the module";
    case SIGABRT: return "aborted: a failed assert, std::terminate or an uncaught exception";
    case SIGBUS: return "a bus error: a bad memory mapping or misaligned access";
    case SIGFPE: return "an arithmetic error such as an integer division by zero";
    case SIGILL: return "an illegal instruction: a binary built for another CPU?";
    default: return "";
  }
}

}  // namespace ditask::launcher
