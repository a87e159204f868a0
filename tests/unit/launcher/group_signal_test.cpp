// SPDX-License-Identifier: MIT
// signal_group(): the one helper that signals worker process groups, and signal names/hints.
#include "ditask/launcher/group_signal.hpp"

#include <cerrno>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

extern char** environ;

using Catch::Matchers::Contains;
using ditask::launcher::signal_group;
using ditask::launcher::SignalResult;

namespace {

/// A `sleep 30` child in its own process group (group id == its pid); killed and reaped at scope
/// exit if the test did not reap it.
struct GroupChild {
  GroupChild() {
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    char sleep_exe[] = "/bin/sleep";
    char seconds[] = "30";
    char* argv[] = {sleep_exe, seconds, nullptr};
    const int rc = ::posix_spawn(&pid, sleep_exe, nullptr, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    REQUIRE(rc == 0);
  }
  ~GroupChild() {
    if (!reaped) {
      ::kill(pid, SIGKILL);
      wait_status();
    }
  }
  GroupChild(const GroupChild&) = delete;
  GroupChild& operator=(const GroupChild&) = delete;

  int wait_status() {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    reaped = true;
    return status;
  }

  pid_t pid = 0;
  bool reaped = false;
};

}  // namespace

TEST_CASE("signal_group refuses group ids <= 1 and the launcher's own group",
          "[launcher][signal]") {
  // Signal 0 only checks: a broken refusal shows as `sent` without harming anything (kill(-1, 9)
  // as root would take the machine down with the test).
  CHECK(signal_group(0, 0) == SignalResult::refused);
  CHECK(signal_group(1, 0) == SignalResult::refused);
  CHECK(signal_group(-1, 0) == SignalResult::refused);
  CHECK(signal_group(-5, 0) == SignalResult::refused);
  CHECK(signal_group(::getpgrp(), 0) == SignalResult::refused);
}

TEST_CASE("signal_group signals a worker's process group", "[launcher][signal]") {
  GroupChild child;
  REQUIRE(::getpgid(child.pid) == child.pid);
  REQUIRE(signal_group(child.pid, SIGTERM) == SignalResult::sent);
  const int status = child.wait_status();
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE("signal_group reports a group that is gone", "[launcher][signal]") {
  pid_t gone = 0;
  {
    GroupChild child;
    gone = child.pid;
    ::kill(child.pid, SIGKILL);
    child.wait_status();
  }
  CHECK(signal_group(gone, SIGTERM) == SignalResult::gone);
}

TEST_CASE("signal names and hints", "[launcher][signal]") {
  using ditask::launcher::signal_hint;
  using ditask::launcher::signal_name;
  CHECK(signal_name(SIGSEGV) == "SIGSEGV");
  CHECK(signal_name(SIGKILL) == "SIGKILL");
  CHECK(signal_name(SIGTERM) == "SIGTERM");
  CHECK(signal_name(SIGINT) == "SIGINT");
  CHECK(signal_name(1000) == "signal 1000");
  CHECK_THAT(signal_hint(SIGKILL), Contains("out of memory"));
  CHECK_THAT(signal_hint(SIGSEGV), Contains("segmentation fault"));
  CHECK(signal_hint(SIGTERM).empty());
}
