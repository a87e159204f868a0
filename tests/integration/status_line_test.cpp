// SPDX-License-Identifier: MIT
// --status: the live status line as a person sees it, on a terminal that tmux provides (its
// screen read back with capture-pane), and its absence when stderr is a pipe.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "run_ditask.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// Runs `command` with sh; its stdout, and its exit code in `code`.
std::string shell(const std::string& command, int* code = nullptr) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    out.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  if (code != nullptr) {
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return out;
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

/// A tmux server of this test's own (its socket named after this process), 100x30, no config.
class Tmux {
 public:
  Tmux() : socket_("ditask-status-" + std::to_string(::getpid())) {}
  ~Tmux() { shell(base() + " kill-server 2>/dev/null"); }
  /// Starts `command` (sh) in a new session's only pane.
  void start(const std::string& command) {
    int code = 0;
    shell(base() + " new-session -d -s job -x 100 -y 30 " + quoted(command), &code);
    REQUIRE(code == 0);
  }
  /// The pane's visible lines, trailing blank lines dropped.
  std::vector<std::string> screen() {
    auto lines = split_lines(shell(base() + " capture-pane -p -t job"));
    while (!lines.empty() && lines.back().find_first_not_of(' ') == std::string::npos) {
      lines.pop_back();
    }
    return lines;
  }
  /// Polls the screen until `done(screen)` holds; FAILs with the screen after `timeout`.
  std::vector<std::string> wait_for(const std::function<bool(const std::vector<std::string>&)>& done,
                                    const std::string& what, std::chrono::seconds timeout = 60s) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto lines = screen();
      if (done(lines)) {
        return lines;
      }
      if (std::chrono::steady_clock::now() > until) {
        std::string shown;
        for (const auto& line : lines) {
          shown += line + "\n";
        }
        FAIL("the terminal never showed " << what << "; it shows:\n" << shown);
      }
      std::this_thread::sleep_for(50ms);
    }
  }

 private:
  std::string base() const { return "tmux -L " + socket_ + " -f /dev/null"; }
  std::string socket_;
};

int count_containing(const std::vector<std::string>& lines, const std::string& needle) {
  int n = 0;
  for (const auto& line : lines) {
    n += line.find(needle) != std::string::npos ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("status line: shown at the bottom of a terminal below the workers' output, gone at the end",
          "[integration][status]") {
  int code = 0;
  shell("command -v tmux >/dev/null 2>&1", &code);
  if (code != 0) {
    DITASK_SKIP("tmux is not installed (Debian package tmux)");
  }
  // tmux needs a pseudo-terminal; a chroot or container without devpts has none.
  const int pty = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (pty < 0) {
    DITASK_SKIP(std::string("no pseudo-terminal can be opened here (posix_openpt: ") + std::strerror(errno) +
                "; mount devpts on /dev/pts)");
  }
  ::close(pty);
  TempDir dir;
  const std::string pid_file = dir.file("pid");
  Tmux tmux;
  // The launcher in the background of a shell keeps the pane's terminal as its stderr; the shell
  // prints its exit code after it and stays, so the final screen can be read.
  std::string job = quoted(DITASK_BIN);
  for (const auto& arg : faults("ticks_then_hang", 3, {"--", "25"})) {
    job += " " + quoted(arg);
  }
  tmux.start("cd " + quoted(dir.path()) + "; " + job + " & echo $! > " + quoted(pid_file) +
             "; wait $!; echo EXIT=$?; exec sleep 600");
  auto running = tmux.wait_for(
      [](const auto& lines) {
        return count_containing(lines, "got 25 ticks") == 2 && !lines.empty() &&
               lines.back().rfind("ditask: 3 running, 0 restarting, 0 exited | ", 0) == 0;
      },
      "the workers' output and '3 running' at the bottom");
  const std::string status = running.back();
  INFO("status line: " << status);
  CHECK_THAT(status, Contains(" events/s, "));
  CHECK_THAT(status, Contains(" calls/s | slowest: "));
  CHECK(count_containing(running, "running, ") == 1);  // one line, never repeated
  CHECK(count_containing(running, "[node 0] sent 25 ticks") == 1);
  for (const auto& line : running) {
    if (line.rfind("[node", 0) == 0) {
      CHECK_THAT(line, !Contains("events/s"));  // output lines are whole, no status text in them
    }
  }
  // Stop the job as a user would; the status line goes before the summary is printed.
  std::ifstream pid_in(pid_file);
  pid_t pid = 0;
  pid_in >> pid;
  REQUIRE(pid > 0);
  REQUIRE(::kill(pid, SIGTERM) == 0);
  auto ended = tmux.wait_for([](const auto& lines) { return count_containing(lines, "EXIT=") == 1; },
                             "the shell's EXIT= line after the job");
  CHECK(count_containing(ended, "EXIT=143") == 1);
  CHECK(count_containing(ended, "running, ") == 0);
  CHECK(count_containing(ended, "events/s") == 0);
  CHECK(count_containing(ended, "ditask: exit code 143") == 1);
  CHECK(count_containing(ended, "ditask: stopped by SIGTERM; forwarded it to every worker") == 1);
}

TEST_CASE("status line: absent when stderr is a pipe, drawn there only with --status on",
          "[integration][status]") {
  SECTION("auto (the default) on a pipe: nothing") {
    auto r = run_ditask(faults("noop", 2), 30s);
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
  }
  SECTION("--status off: nothing") {
    auto r = run_ditask(faults("noop", 2, {"--status", "off"}), 30s);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
  }
  SECTION("--status on: drawn, then erased (carriage return, erase line)") {
    auto r = run_ditask(faults("noop", 2, {"--status", "on"}), 30s);
    INFO(describe(r));
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, StartsWith("\r\x1b[Kditask: "));
    CHECK_THAT(r.err, Contains(" running, "));
    CHECK(r.err.size() >= 4);
    CHECK(r.err.substr(r.err.size() - 4) == "\r\x1b[K");  // the last thing written erases it
  }
  SECTION("a value it does not know: exit 2 with the choices") {
    auto r = run_ditask(faults("noop", 2, {"--status", "offf"}), 30s);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("ditask: error: unknown --status 'offf'"));
    CHECK_THAT(r.err, Contains("did you mean 'off'?"));
  }
}
