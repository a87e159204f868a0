// SPDX-License-Identifier: MIT
#include "run_ditask.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

extern char** environ;

namespace ditask::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string tail(const std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return text;
  }
  auto start = text.find('\n', text.size() - max_bytes);
  start = start == std::string::npos ? text.size() - max_bytes : start + 1;
  return "[... " + std::to_string(start) + " bytes left out ...]\n" + text.substr(start);
}

std::string command_text(const std::vector<std::string>& args) {
  std::string text = "ditask";
  for (const auto& a : args) {
    text += " " + a;
  }
  return text;
}

int status_to_code(int status) {
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> child_environment(const Env& extra,
                                           const std::vector<std::string>& unset) {
  std::map<std::string, std::string> env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string entry(*p);
    auto eq = entry.find('=');
    if (eq == std::string::npos || entry.rfind("DITASK_", 0) == 0) {
      continue;
    }
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (const auto& [key, value] : extra) {
    env[key] = value;
  }
  for (const auto& key : unset) {
    env.erase(key);
  }
  std::vector<std::string> out;
  for (const auto& [key, value] : env) {
    out.push_back(key + "=" + value);
  }
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  for (auto& item : items) {
    out.push_back(item.data());
  }
  out.push_back(nullptr);
  return out;
}

int count_in_complete_lines(const std::string& text, const std::string& needle) {
  int count = 0;
  std::size_t start = 0;
  for (auto nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    if (std::string_view(text).substr(start, nl - start).find(needle) != std::string_view::npos) {
      ++count;
    }
    start = nl + 1;
  }
  return count;
}

}  // namespace

// --- free helpers ---------------------------------------------------------------------------

RunResult run_ditask(std::vector<std::string> args, std::chrono::seconds timeout, Env extra_env,
                     std::vector<std::string> unset_env) {
  DitaskProcess process;
  process.start(args, extra_env, unset_env);
  return process.wait(timeout);
}

std::string describe(const RunResult& result) {
  std::ostringstream text;
  text << "exit code " << result.exit_code << "\n--- stderr ---\n"
       << tail(result.err, 8000) << "\n--- stdout (tail) ---\n"
       << tail(result.out, 4000);
  return text.str();
}

std::string module_path(const std::string& name) { return DITASK_MODULE_DIR "/lib" + name + ".so"; }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::vector<std::string> faults(const std::string& entry, int workers, std::vector<std::string> more) {
  std::vector<std::string> args = {"--package", module_path("faults"), "--main",
                                   entry,       "--parallel-workers",  std::to_string(workers)};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  for (auto& line : split_lines(text)) {
    if (line.find(needle) != std::string::npos) {
      out.push_back(std::move(line));
    }
  }
  return out;
}

std::vector<pid_t> numbers_after(const std::string& text, const std::string& marker) {
  std::vector<pid_t> out;
  for (auto pos = text.find(marker); pos != std::string::npos; pos = text.find(marker, pos + 1)) {
    const char* begin = text.c_str() + pos + marker.size();
    char* end = nullptr;
    long value = std::strtol(begin, &end, 10);
    if (end != begin) {
      out.push_back(static_cast<pid_t>(value));
    }
  }
  return out;
}

bool process_gone(pid_t pid) {
  if (pid <= 0) {
    return true;
  }
  if (::kill(pid, 0) != 0 && errno == ESRCH) {
    return true;
  }
  // A zombie (its parent is gone and nobody reaps it) is dead all the same.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  if (!std::getline(stat, content)) {
    return true;
  }
  auto paren = content.rfind(')');
  if (paren == std::string::npos || paren + 2 >= content.size()) {
    return false;
  }
  const char state = content[paren + 2];
  return state == 'Z' || state == 'X';
}

bool wait_process_gone(pid_t pid, std::chrono::milliseconds timeout) {
  // A pidfd becomes readable when the process exits, child of ours or not: no polling needed.
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ESRCH) {
      return true;
    }
    FAIL("pidfd_open(" << pid << ") failed: " << std::strerror(errno));
  }
  pollfd exited{fd, POLLIN, 0};
  const int ready = ::poll(&exited, 1, static_cast<int>(timeout.count()));
  ::close(fd);
  return ready == 1;
}

// --- DitaskProcess -----------------------------------------------------------------------------

DitaskProcess::~DitaskProcess() {
  kill_all();
  for (int fd : {out_fd_, err_fd_, pid_fd_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

void DitaskProcess::kill_all() {
  if (pid_ > 0 && !exited_) {
    ::kill(-pid_, SIGKILL);
    reap(true);
  }
}

void DitaskProcess::start(const std::vector<std::string>& args, const Env& extra_env,
                          const std::vector<std::string>& unset_env) {
  start_wrapped({}, args, extra_env, unset_env);
}

void DitaskProcess::start_wrapped(const std::vector<std::string>& wrapper, const std::vector<std::string>& args,
                                  const Env& extra_env, const std::vector<std::string>& unset_env) {
  REQUIRE(pid_ < 0);
  args_ = args;
  std::array<int, 2> out_pipe{};
  std::array<int, 2> err_pipe{};
  REQUIRE(::pipe2(out_pipe.data(), O_CLOEXEC) == 0);
  REQUIRE(::pipe2(err_pipe.data(), O_CLOEXEC) == 0);

  std::vector<std::string> argv_text = wrapper;
  argv_text.push_back(DITASK_BIN);
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  auto envp_text = child_environment(extra_env, unset_env);
  auto argv = c_strings(argv_text);
  auto envp = c_strings(envp_text);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: the timeout kills exactly this run
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc =
      ::posix_spawn(&pid, argv_text[0].c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    FAIL("cannot start " << argv_text[0] << ": " << std::strerror(rc));
  }
  pid_ = pid;
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  pid_fd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1: fall back to short slices
}

bool DitaskProcess::reap(bool block) {
  if (exited_) {
    return true;
  }
  int status = 0;
  pid_t r = 0;
  do {
    r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    exited_ = true;
    status_ = status;
  }
  return exited_;
}

bool DitaskProcess::running() { return pid_ > 0 && !reap(false); }

bool DitaskProcess::pump(milliseconds slice) {
  std::array<pollfd, 3> fds{};
  nfds_t n = 0;
  int* owners[3] = {nullptr, nullptr, nullptr};
  for (int* fd : {&out_fd_, &err_fd_}) {
    if (*fd >= 0) {
      fds[n] = {*fd, POLLIN, 0};
      owners[n++] = fd;
    }
  }
  const bool watch_exit = !exited_ && pid_fd_ >= 0;
  if (watch_exit) {
    fds[n++] = {pid_fd_, POLLIN, 0};
  }
  if (n == 0) {  // pipes closed, no pidfd: only the exit is left, checked every 20 ms
    if (!reap(false)) {
      ::poll(nullptr, 0, static_cast<int>(std::min(slice, milliseconds(20)).count()));
    }
    return !reap(false);
  }
  // Without a pidfd, the exit is noticed between slices of at most 20 ms.
  const auto wait = (!exited_ && pid_fd_ < 0) ? std::min(slice, milliseconds(20)) : slice;
  const int ready = ::poll(fds.data(), n, static_cast<int>(wait.count()));
  if (ready < 0 && errno != EINTR) {
    FAIL("poll failed: " << std::strerror(errno));
  }
  std::array<char, 65536> buffer{};
  for (nfds_t i = 0; i < n; ++i) {
    if (owners[i] == nullptr || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
      continue;
    }
    const ssize_t got = ::read(*owners[i], buffer.data(), buffer.size());
    if (got > 0) {
      (owners[i] == &out_fd_ ? out_ : err_).append(buffer.data(), static_cast<std::size_t>(got));
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      ::close(*owners[i]);
      *owners[i] = -1;
    }
  }
  reap(false);
  return !(exited_ && out_fd_ < 0 && err_fd_ < 0);
}

int DitaskProcess::count_lines(const std::string& substring) const {
  return count_in_complete_lines(out_, substring) + count_in_complete_lines(err_, substring);
}

bool DitaskProcess::wait_until(const std::function<bool()>& done, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left <= milliseconds(0)) {
      return false;
    }
    if (!pump(left)) {
      return done();
    }
  }
  return true;
}

bool DitaskProcess::wait_for_line(const std::string& substring, milliseconds timeout, int count) {
  return wait_until([&] { return count_lines(substring) >= count; }, timeout);
}

void DitaskProcess::require_line(const std::string& substring, milliseconds timeout, int count) {
  if (!wait_for_line(substring, timeout, count)) {
    FAIL("expected " << count << " line(s) containing '" << substring << "' within "
                     << timeout.count() << " ms, got " << count_lines(substring) << "\n"
                     << describe_so_far());
  }
}

void DitaskProcess::send_signal(int sig) {
  REQUIRE(pid_ > 0);
  REQUIRE(!exited_);
  REQUIRE(::kill(pid_, sig) == 0);
}

RunResult DitaskProcess::wait(std::chrono::seconds timeout) {
  REQUIRE(pid_ > 0);
  const auto deadline = Clock::now() + timeout;
  bool more = true;
  while (more) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left <= milliseconds(0)) {
      break;
    }
    more = pump(left);
  }
  if (more) {
    const bool was_running = !exited_;
    kill_all();
    RunResult partial{-1, out_, err_};
    FAIL((was_running ? "ditask did not exit within " : "ditask's output did not end within ")
         << timeout.count() << " s: " << command_text(args_) << "\n"
         << describe(partial));
  }
  return RunResult{status_to_code(status_), out_, err_};
}

std::string DitaskProcess::describe_so_far() const {
  return "command: " + command_text(args_) + "\n" + describe(RunResult{-1, out_, err_});
}

}  // namespace ditask::test
