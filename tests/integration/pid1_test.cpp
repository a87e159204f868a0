// SPDX-License-Identifier: MIT
// The launcher as the PID 1 of a container (a PID namespace of its own, as `docker run` without
// --init gives it): it reaps the orphans its workers leave behind and still handles SIGTERM, which
// the kernel drops for a PID 1 without a handler. Needs root and a machine where unshare can make
// a PID namespace with its own /proc (not in a chroot, nor an unprivileged container); skipped
// with the reason elsewhere.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "run_ditask.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Why the launcher cannot be run as a PID namespace's PID 1 here, or "" when it can: the test's
/// own wrapper, tried once with a program that does nothing.
std::string pid_namespace_unavailable() {
  if (::geteuid() != 0) {
    return "needs root for a PID namespace";
  }
  if (::access("/usr/bin/unshare", X_OK) != 0) {
    return "needs /usr/bin/unshare (util-linux)";
  }
  FILE* probe = ::popen("/usr/bin/unshare --pid --fork --mount-proc /bin/true 2>&1", "r");
  if (probe == nullptr) {
    return "cannot run /usr/bin/unshare";
  }
  std::string said;
  char chunk[256];
  while (std::fgets(chunk, sizeof chunk, probe) != nullptr) {
    said += chunk;
  }
  const int status = ::pclose(probe);
  if (status == 0) {
    return "";
  }
  said = said.substr(0, said.find('\n'));
  return "this machine cannot make a PID namespace with its own /proc (`unshare --pid --fork --mount-proc` says: " +
         (said.empty() ? std::string("nothing") : said) + "), as in a chroot or an unprivileged container";
}

/// The value of `key:` in /proc/<pid>/status ("" when gone).
std::string status_field(pid_t pid, const std::string& key) {
  const auto text = read_text("/proc/" + std::to_string(pid) + "/status");
  const auto at = text.find("\n" + key + ":");
  if (at == std::string::npos) {
    return "";
  }
  const auto start = text.find_first_not_of(" \t", at + key.size() + 2);
  return text.substr(start, text.find('\n', start) - start);
}

/// The one child of `pid` (the launcher under unshare --fork), or -1.
pid_t child_of(pid_t pid) {
  std::istringstream children(read_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  pid_t child = -1;
  children >> child;
  return child;
}

/// The host pid of the process with pid `ns_pid` in the namespace of `member`, or -1.
pid_t host_pid_in_namespace(pid_t member, pid_t ns_pid) {
  const auto ns = read_text("/proc/" + std::to_string(member) + "/status").empty()
                      ? std::string()
                      : std::to_string(member);
  char target[64] = {};
  const auto link = "/proc/" + ns + "/ns/pid";
  if (::readlink(link.c_str(), target, sizeof target - 1) <= 0) {
    return -1;
  }
  DIR* proc = ::opendir("/proc");
  pid_t found = -1;
  while (dirent* entry = proc != nullptr ? ::readdir(proc) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    char other[64] = {};
    const auto other_link = "/proc/" + std::to_string(pid) + "/ns/pid";
    if (pid <= 0 || ::readlink(other_link.c_str(), other, sizeof other - 1) <= 0 || std::string(other) != target) {
      continue;
    }
    const auto nspid = status_field(pid, "NSpid");
    if (nspid.size() > std::to_string(ns_pid).size() &&
        nspid.substr(nspid.rfind('\t') + 1) == std::to_string(ns_pid)) {
      found = pid;
    }
  }
  if (proc != nullptr) {
    ::closedir(proc);
  }
  return found;
}

}  // namespace

TEST_CASE("pid 1: as a container's PID 1 the launcher reaps orphans and still stops on SIGTERM",
          "[integration][pid1]") {
  if (const auto why = pid_namespace_unavailable(); !why.empty()) {
    DITASK_SKIP(why);
  }
  DitaskProcess p;
  p.start_wrapped({"/usr/bin/unshare", "--pid", "--fork", "--mount-proc"}, faults("orphan_then_hang", 2));
  p.require_line("orphan pid=", 30s);
  p.require_line("ready pid=", 30s);
  const pid_t launcher = child_of(p.pid());
  REQUIRE(launcher > 0);
  CHECK(status_field(launcher, "NSpid").substr(status_field(launcher, "NSpid").rfind('\t') + 1) == "1");
  const auto orphan_ns = numbers_after(p.out(), "orphan pid=");
  REQUIRE(orphan_ns.size() == 1);
  // Node 0 has returned, so the orphan ends: as PID 1 the launcher must reap it. /proc has no
  // notification for a zombie's reaping: look until it is gone (a bound, not a synchronisation).
  bool reaped = false;
  for (int i = 0; i < 3000 && !reaped; ++i) {
    const pid_t host = host_pid_in_namespace(launcher, orphan_ns[0]);
    reaped = host < 0 || status_field(host, "State").empty();
    if (!reaped) {
      std::this_thread::sleep_for(10ms);
    }
  }
  INFO(p.describe_so_far());
  CHECK(reaped);
  // A PID 1 gets a signal from outside its namespace only if it handles it.
  REQUIRE(::kill(launcher, SIGTERM) == 0);
  auto r = p.wait(60s);
  INFO(describe(r));
  CHECK(r.exit_code == 143);
  CHECK_THAT(r.err, Contains("ditask: stopped by SIGTERM; forwarded it to every worker"));
}
