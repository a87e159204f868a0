// SPDX-License-Identifier: MIT
#include "spawn_posix.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <system_error>

#include "ditask/launcher/worker_guard.hpp"

namespace ditask::launcher {
namespace {

// posix_spawn's attribute and file-action objects, destroyed on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    ::posix_spawn_file_actions_init(&actions_);
    ::posix_spawnattr_init(&attr_);
  }
  ~SpawnSetup() {
    ::posix_spawn_file_actions_destroy(&actions_);
    ::posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attr() { return &attr_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

void check(int rc, const std::string& what) {
  if (rc != 0) {
    throw std::system_error(rc, std::generic_category(), what);
  }
}

std::vector<char*> pointers(const std::vector<std::string>& strings, const std::string* first) {
  std::vector<char*> out;
  out.reserve(strings.size() + 2);
  if (first != nullptr) {
    out.push_back(const_cast<char*>(first->c_str()));
  }
  for (const auto& s : strings) {
    out.push_back(const_cast<char*>(s.c_str()));
  }
  out.push_back(nullptr);
  return out;
}

}  // namespace

pid_t spawn_worker(const SpawnRequest& request) {
  SpawnSetup setup;
  const std::string what = "cannot prepare the start of " + request.exe;
  auto* actions = setup.actions();
  check(::posix_spawn_file_actions_addopen(actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0), what);
  check(::posix_spawn_file_actions_adddup2(actions, request.stdout_fd, STDOUT_FILENO), what);
  check(::posix_spawn_file_actions_adddup2(actions, request.stderr_fd, STDERR_FILENO), what);
  if (request.listen_fd >= 0) {
    // Equal fds: dup2 then clears FD_CLOEXEC (glibc >= 2.29), as POSIX asks.
    check(::posix_spawn_file_actions_adddup2(actions, request.listen_fd, kListenFd), what);
  }
  check(::posix_spawn_file_actions_addclosefrom_np(actions, request.listen_fd >= 0 ? kListenFd + 1 : kListenFd),
        what);

  auto* attr = setup.attr();
  sigset_t none;
  ::sigemptyset(&none);
  sigset_t to_default;
  ::sigemptyset(&to_default);
  ::sigaddset(&to_default, SIGHUP);   // the launcher ignores it; ignored dispositions survive exec
  ::sigaddset(&to_default, SIGPIPE);
  check(::posix_spawnattr_setsigmask(attr, &none), what);
  check(::posix_spawnattr_setsigdefault(attr, &to_default), what);
  check(::posix_spawnattr_setpgroup(attr, 0), what);
  check(::posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
        what);

  auto argv = pointers(request.args, &request.exe);
  auto envp = pointers(request.env, nullptr);
  pid_t pid = -1;
  check(::posix_spawn(&pid, request.exe.c_str(), actions, attr, argv.data(), envp.data()),
        "cannot execute " + request.exe);
  return pid;
}

}  // namespace ditask::launcher

namespace ditask::launcher {

void die_with_launcher() noexcept {
  const char* launcher = std::getenv("DITASK_LAUNCHER_PID");
  if (launcher == nullptr || *launcher == '\0') {
    return;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // After arming: a launcher that died before it would otherwise go unnoticed.
  if (std::to_string(::getppid()) != launcher) {
    ::raise(SIGKILL);
  }
}

}  // namespace ditask::launcher
