// SPDX-License-Identifier: MIT
// The integration-test harness: runs the real `ditask` binary (DITASK_BIN) against the test
// modules of plugins/ (DITASK_MODULE_DIR), captures its stdout and stderr, and bounds every wait.
// CMake target: ditask_integration_support (links Catch2; builds ditask and the modules first).
//
//   using namespace std::chrono_literals;
//   using namespace ditask::test;
//   auto r = run_ditask({"--package", module_path("faults"), "--main", "noop"}, 20s);
//   INFO(describe(r));          // exit code, stderr and the tail of stdout when a check fails
//   CHECK(r.exit_code == 0);
//
// The child gets the test's environment without any DITASK_* variable (so a stray
// DITASK_LAUNCH_* of the caller cannot change a test), plus `extra_env`, minus `unset_env`.
// It runs in its own process group with default signal dispositions, stdin from /dev/null.
// On timeout its process group gets SIGKILL and the test FAILs with the output so far.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

#include "fixtures.hpp"  // TempDir, PortSquatter

namespace ditask::test {

/// How a ditask run ended.
struct RunResult {
  int exit_code = -1;  ///< WEXITSTATUS, or 128+signal when killed by a signal
  std::string out;     ///< everything written to stdout
  std::string err;     ///< everything written to stderr
};

using Env = std::map<std::string, std::string>;

/// Runs `ditask args...` to its end (process exit and EOF on both pipes), at most `timeout`.
RunResult run_ditask(std::vector<std::string> args, std::chrono::seconds timeout,
                     Env extra_env = {}, std::vector<std::string> unset_env = {});

/// "exit code N", the child's stderr and the last lines of its stdout: for INFO(...).
std::string describe(const RunResult& result);

/// DITASK_MODULE_DIR "/lib<name>.so", e.g. module_path("faults").
std::string module_path(const std::string& name);

/// `--package <faults module> --main <entry> --parallel-workers <workers>` plus `more`.
std::vector<std::string> faults(const std::string& entry, int workers,
                                std::vector<std::string> more = {});

/// The lines of `text` without their '\n' (a last line without '\n' counts too).
std::vector<std::string> split_lines(const std::string& text);

/// Lines of `text` that contain `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle);

/// Every integer that follows `marker` in `text` ("ready pid=" -> the pids of "ready pid=123").
std::vector<pid_t> numbers_after(const std::string& text, const std::string& marker);

/// True when `pid` no longer exists (or is a zombie nobody reaped). Does not wait.
bool process_gone(pid_t pid);

/// Waits (pidfd, no polling) at most `timeout` for `pid` to exit; true once it is gone.
bool wait_process_gone(pid_t pid, std::chrono::milliseconds timeout);

/// A ditask run the test interacts with while it runs (signals). Single-threaded: output is
/// read while the test waits in wait_for_line()/wait_until()/wait(). The destructor SIGKILLs
/// the launcher's process group and reaps it (workers die by their parent-death signal).
class DitaskProcess {
 public:
  DitaskProcess() = default;
  ~DitaskProcess();
  DitaskProcess(const DitaskProcess&) = delete;
  DitaskProcess& operator=(const DitaskProcess&) = delete;

  /// Starts `ditask args...` (environment as for run_ditask). REQUIREs that the spawn worked.
  void start(const std::vector<std::string>& args, const Env& extra_env = {},
             const std::vector<std::string>& unset_env = {});
  /// Starts `wrapper... ditask args...` (e.g. `unshare --pid --fork ditask ...`); pid() is then
  /// the wrapper's.
  void start_wrapped(const std::vector<std::string>& wrapper, const std::vector<std::string>& args,
                     const Env& extra_env = {}, const std::vector<std::string>& unset_env = {});
  pid_t pid() const { return pid_; }
  pid_t pgid() const { return pid_; }  // the launcher leads its own group

  /// Reads output until at least `count` complete lines (stdout or stderr) contain `substring`;
  /// false if that did not happen within `timeout` or the output ended first.
  bool wait_for_line(const std::string& substring, std::chrono::milliseconds timeout,
                     int count = 1);
  /// wait_for_line(), FAILing the test with the output so far when the line did not come.
  void require_line(const std::string& substring, std::chrono::milliseconds timeout, int count = 1);
  /// Reads output until `done()` holds; false on timeout or when the process ended without it.
  bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout);
  /// Complete lines (stdout and stderr) that contain `substring`, so far.
  int count_lines(const std::string& substring) const;

  /// kill(pid(), sig): to the launcher alone, as a user or a batch system would.
  void send_signal(int sig);
  /// True while the launcher has not exited (reaps it if it has). Does not wait.
  bool running();

  /// Waits for exit and EOF on both pipes; on timeout SIGKILLs the group and FAILs the test.
  RunResult wait(std::chrono::seconds timeout);

  /// Output so far.
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  /// describe() of the output so far (exit code -1 while running).
  std::string describe_so_far() const;

 private:
  /// One poll round of at most `slice`; false when nothing is left to wait for.
  bool pump(std::chrono::milliseconds slice);
  bool reap(bool block);
  void kill_all();

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int pid_fd_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string out_;
  std::string err_;
  std::vector<std::string> args_;
};

}  // namespace ditask::test
