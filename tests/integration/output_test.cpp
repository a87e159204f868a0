// SPDX-License-Identifier: MIT
// Worker output: tagged, whole lines, nothing lost (also when a worker dies), per-node log files.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/syscall.h>
#include <thread>

#include <catch2/catch.hpp>

#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;

namespace {

const std::string kTail = " " + std::string(64, 'x');

/// The text faults' spam prints: "node N line i xxxx...".
std::string spam_line(long node, long i) {
  return "node " + std::to_string(node) + " line " + std::to_string(i) + kTail;
}

/// Checks that `lines` hold every spam_line(node, i) once for each node and i < per_node, each
/// preceded by prefix(node); returns a description of the first problems (empty when all fine).
std::string check_spam(const std::vector<std::string>& lines, const std::vector<long>& nodes,
                       long per_node, const std::function<std::string(long)>& prefix) {
  std::string problems;
  int reported = 0;
  auto problem = [&](const std::string& text) {
    if (reported++ < 5) {
      problems += text + "\n";
    }
  };
  std::map<long, std::vector<char>> seen;
  for (long node : nodes) {
    seen[node].assign(static_cast<std::size_t>(per_node), 0);
  }
  for (const auto& line : lines) {
    // "<prefix>node N line i <tail>"
    const auto word = line.find(" line ");
    const auto at = word == std::string::npos ? std::string::npos : line.rfind("node ", word);
    bool ok = false;
    if (at != std::string::npos) {
      std::string rest = line.substr(at);
      long node = -1;
      long i = -1;
      if (std::sscanf(rest.c_str(), "node %ld line %ld", &node, &i) == 2 && seen.count(node) == 1 &&
          i >= 0 && i < per_node && line == prefix(node) + spam_line(node, i)) {
        auto& mark = seen[node][static_cast<std::size_t>(i)];
        if (mark != 0) {
          problem("twice: " + line);
        }
        mark = 1;
        ok = true;
      }
    }
    if (!ok) {
      problem("unexpected line: '" + line.substr(0, 200) + "'");
    }
  }
  for (auto& [node, marks] : seen) {
    for (std::size_t i = 0; i < marks.size(); ++i) {
      if (marks[i] == 0) {
        problem("missing: node " + std::to_string(node) + " line " + std::to_string(i));
      }
    }
  }
  if (reported > 5) {
    problems += "... " + std::to_string(reported - 5) + " more problems\n";
  }
  return problems;
}

std::string tag(long node) { return "[node " + std::to_string(node) + "] "; }

/// True when `pid` is in write(2) on `fd` (from /proc/<pid>/syscall: "1 0x<fd> ...").
bool in_write(pid_t pid, int fd) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
  std::string number;
  std::string first_arg;
  in >> number >> first_arg;
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%x", static_cast<unsigned>(fd));
  return number == std::to_string(SYS_write) && first_arg == hex;
}

/// True when `pid` sleeps in write(2) on `fd`, a full pipe (wchan "pipe_write" or
/// "anon_pipe_write").
bool blocked_writing(pid_t pid, int fd) {
  if (!in_write(pid, fd)) {
    return false;
  }
  std::ifstream in("/proc/" + std::to_string(pid) + "/wchan");
  std::string wchan;
  in >> wchan;
  return wchan.find("pipe_write") != std::string::npos && in_write(pid, fd);
}

/// Polls blocked_writing() every 20 ms for at most `timeout`.
bool wait_blocked_writing(pid_t pid, int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!blocked_writing(pid, fd)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(20ms);  // polling a condition, bounded by `timeout`
  }
  return true;
}

}  // namespace

TEST_CASE("4 workers x 20000 lines: all present and whole and tagged", "[integration][output]") {
  auto r = run_ditask(
      {"--package", module_path("faults"), "--main", "spam", "--parallel-workers", "4"}, 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  REQUIRE(!r.out.empty());
  CHECK(r.out.back() == '\n');
  auto lines = split_lines(r.out);
  CHECK(lines.size() == 80000);
  CHECK(check_spam(lines, {0, 1, 2, 3}, 20000, tag) == "");
}

TEST_CASE("a signal while the launcher's stdout is backed up loses no line",
          "[integration][output]") {
  // The reader (this test) does not read until the launcher blocks writing to its full stdout
  // pipe; then a signal the launcher handles (SIGHUP: ignored) interrupts that write, several
  // times over (one signal does not always land inside the write).
  DitaskProcess p;
  p.start({"--package", module_path("faults"), "--main", "spam", "--parallel-workers", "1"});
  for (int round = 0; round < 5; ++round) {
    CAPTURE(round);
    REQUIRE(wait_blocked_writing(p.pid(), 1, 20s));
    p.send_signal(SIGHUP);
  }
  auto r = p.wait(60s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  auto lines = split_lines(r.out);
  CHECK(lines.size() == 20000);
  CHECK(check_spam(lines, {0}, 20000, tag) == "");
}

TEST_CASE("untagged output (--no-tag-output) prints the workers' lines as they are",
          "[integration][output]") {
  auto r = run_ditask({"--package", module_path("faults"), "--main", "spam", "--parallel-workers",
                       "2", "--no-tag-output", "--", "500"},
                      30s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  auto lines = split_lines(r.out);
  CHECK(lines.size() == 1000);
  CHECK(check_spam(lines, {0, 1}, 500, [](long) { return std::string(); }) == "");
}

TEST_CASE("tag format (--tag-format) replaces {rank}", "[integration][output]") {
  auto r = run_ditask({"--package", module_path("faults"), "--main", "spam", "--parallel-workers",
                       "2", "--node-ids", "5", "--tag-format", "<{rank}>", "--", "300"},
                      30s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  auto lines = split_lines(r.out);
  CHECK(lines.size() == 600);
  // node 5 is rank 0, node 6 rank 1
  CHECK(check_spam(lines, {5, 6}, 300,
                   [](long node) { return "<" + std::to_string(node - 5) + "> "; }) == "");
}

TEST_CASE("tag format {attempt} and {node} follow restarts", "[integration][output]") {
  auto r = run_ditask({"--package", module_path("faults"), "--main", "fail_first_attempt",
                       "--parallel-workers", "2", "--auto-recover", "--restart-backoff", "0.01",
                       "--tag-format", "[{node}/{attempt}]", "--", "1"},
                      30s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  auto lines = split_lines(r.out);
  std::sort(lines.begin(), lines.end());
  CHECK(lines ==
        std::vector<std::string>{"[0/0] node 0 attempt 0 ok", "[1/1] node 1 attempt 1 ok"});
  CHECK_THAT(
      r.err,
      Contains(
          "[1/0] ditask: error: entry 'fail_first_attempt' failed: failing attempt 0 on node 1\n"));
}

TEST_CASE("log dir (--log-dir) gets <run>/attempt_0/node_<N>.log per node",
          "[integration][output]") {
  TempDir dir;
  auto r = run_ditask({"--package", module_path("faults"), "--main", "spam", "--parallel-workers",
                       "2", "--node-ids", "3", "--log-dir", dir.path(), "--", "200"},
                      30s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(split_lines(r.out).size() == 400);  // the terminal still gets everything
  std::vector<std::filesystem::path> runs;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    runs.push_back(entry.path());
  }
  REQUIRE(runs.size() == 1);
  CHECK(std::filesystem::is_directory(runs[0]));
  for (long node : {3L, 4L}) {
    CAPTURE(node);
    auto path = runs[0] / "attempt_0" / ("node_" + std::to_string(node) + ".log");
    CAPTURE(path.string());
    REQUIRE(std::filesystem::is_regular_file(path));
    std::ifstream in(path);
    std::stringstream content;
    content << in.rdbuf();
    auto lines = split_lines(content.str());
    CHECK(lines.size() == 200);
    // The log holds this node's lines only, untagged.
    CHECK(check_spam(lines, {node}, 200, [](long) { return std::string(); }) == "");
  }
}

TEST_CASE("a worker's last words on stderr come before the summary and are quoted in it",
          "[integration][output]") {
  auto r = run_ditask(
      {"--package", module_path("faults"), "--main", "stderr_then_die", "--parallel-workers", "2"},
      30s);
  INFO(describe(r));
  CHECK(r.exit_code == 134);
  auto lines = split_lines(r.err);
  std::size_t summary_at = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("ditask: job failed: ", 0) == 0) {
      summary_at = i;
      break;
    }
  }
  REQUIRE(summary_at < lines.size());
  CHECK_THAT(lines[summary_at], Contains("killed by SIGABRT"));
  // The failed node's three lines arrive, whole, before the summary. (The other node may have
  // been stopped by the launcher before it wrote anything.)
  const std::string failed =
      lines[summary_at].substr(std::string("ditask: job failed: node ").size(), 1);
  CAPTURE(failed);
  for (int k = 1; k <= 3; ++k) {
    const std::string expected = "[node " + failed + "] last words " + std::to_string(k);
    CAPTURE(expected);
    auto at = std::find(lines.begin(), lines.end(), expected);
    CHECK(at != lines.end());
    CHECK(at - lines.begin() < static_cast<std::ptrdiff_t>(summary_at));
  }
  CHECK_THAT(r.err, Contains("ditask: last lines of node " + failed + "'s stderr:"));
  for (int k = 1; k <= 3; ++k) {
    CHECK_THAT(r.err, Contains("ditask:   | last words " + std::to_string(k) + "\n"));
  }
  CHECK_THAT(r.err, Contains("ditask: hint: aborted"));
  CHECK_THAT(r.err, Contains("ditask: exit code 134\n"));
}
