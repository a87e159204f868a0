// SPDX-License-Identifier: MIT
// Supervision: exit codes, the failure summary, fail-fast, auto-recover and --timeout.
#include <filesystem>
#include <optional>

#include <catch2/catch.hpp>

#include "redis_server.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// The one stderr line that starts with `prefix` (empty when there is none or several).
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::string found;
  int count = 0;
  for (const auto& line : split_lines(text)) {
    if (line.rfind(prefix, 0) == 0) {
      found = line;
      ++count;
    }
  }
  return count == 1 ? found : std::string();
}

/// The entries of a directory (names only), sorted.
std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// The single run directory under a --log-dir.
std::filesystem::path run_dir(const TempDir& logs) {
  auto runs = names_in(logs.path());
  REQUIRE(runs.size() == 1);
  return std::filesystem::path(logs.path()) / runs[0];
}

}  // namespace

TEST_CASE("every worker succeeds: exit 0 and nothing on stderr", "[integration][supervision]") {
  auto r = run_ditask(faults("noop", 4), 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.empty());
}

TEST_CASE("one worker (--parallel-workers 1) is still supervised", "[integration][supervision]") {
  auto ok = run_ditask(faults("noop", 1), 30s);
  INFO(describe(ok));
  CHECK(ok.exit_code == 0);
  CHECK(ok.err.empty());
  auto failed = run_ditask(faults("exit_code", 1, {"--", "5"}), 30s);
  INFO(describe(failed));
  CHECK(failed.exit_code == 5);
  CHECK_THAT(failed.err, Contains("ditask: job failed: node 0 (pid ") &&
                             Contains(", attempt 0) exited with code 5\n"));
}

TEST_CASE("a crashing worker is reported with its node and signal and the others are stopped",
          "[integration][supervision]") {
  auto r = run_ditask(faults("segv_on_node", 3, {"--", "1"}), 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 139);
  const auto failed = line_starting(r.err, "ditask: job failed: ");
  CHECK_THAT(failed, StartsWith("ditask: job failed: node 1 (pid ") &&
                         Contains(", attempt 0) killed by SIGSEGV"));
  CHECK_THAT(r.err, Contains("ditask: hint: a segmentation fault"));
  CHECK_THAT(r.err, Contains("ditask: node 1 wrote nothing to stderr\n"));
  const auto stopped = line_starting(r.err, "ditask: stopped by the launcher: ");
  CHECK_THAT(stopped, Contains("node 0 (pid ") && Contains("node 2 (pid "));
  CHECK_THAT(stopped, !Contains("node 1 "));
  CHECK_THAT(r.err, Contains("ditask: exit code 139\n"));
}

TEST_CASE("a worker's exit code becomes the launcher's", "[integration][supervision]") {
  auto r = run_ditask(faults("exit_code", 2, {"--", "3"}), 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 3);
  CHECK_THAT(line_starting(r.err, "ditask: job failed: "), Contains(") exited with code 3"));
  CHECK_THAT(r.err, Contains("ditask: exit code 3\n"));
}

TEST_CASE("an exception escaping the entry fails the job with its text in the summary",
          "[integration][supervision]") {
  auto r = run_ditask(faults("throw_error", 1), 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err,
             Contains("[node 0] ditask: error: entry 'throw_error' failed: boom from node 0\n"));
  CHECK_THAT(line_starting(r.err, "ditask: job failed: "),
             StartsWith("ditask: job failed: node 0 (pid ") && Contains("exited with code 1"));
  CHECK_THAT(r.err, Contains("ditask: last lines of node 0's stderr:\n"));
  CHECK_THAT(r.err,
             Contains("ditask:   | ditask: error: entry 'throw_error' failed: boom from node 0\n"));
}

TEST_CASE("a worker killed by SIGKILL gets the out-of-memory hint", "[integration][supervision]") {
  auto r = run_ditask(faults("kill_self", 1), 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 137);
  CHECK_THAT(r.err, Contains("killed by SIGKILL") &&
                        Contains("ditask: hint: killed by SIGKILL: out of memory?"));
}

TEST_CASE("fail fast: the first failure stops the other workers", "[integration][supervision]") {
  auto r = run_ditask(faults("fail_on_node", 3, {"--", "1"}), 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK_THAT(
      r.err,
      Contains(
          "[node 1] ditask: error: entry 'fail_on_node' failed: failing on purpose on node 1\n"));
  CHECK_THAT(line_starting(r.err, "ditask: job failed: "),
             StartsWith("ditask: job failed: node 1 (pid "));
  const auto stopped = line_starting(r.err, "ditask: stopped by the launcher: ");
  CHECK_THAT(stopped, Contains("node 0 (pid ") && Contains("node 2 (pid "));
  auto pids = numbers_after(stopped, "(pid ");
  CHECK(pids.size() == 2);
  for (pid_t pid : pids) {
    CAPTURE(pid);
    CHECK(pid > 1);
    CHECK(process_gone(pid));  // the launcher waited for them before exiting
  }
  CHECK_THAT(r.err, Contains("ditask: exit code 1\n"));
}

TEST_CASE("auto-recover restarts exactly the failed worker", "[integration][supervision]") {
  TempDir logs;
  auto r = run_ditask(faults("fail_first_attempt", 3,
                             {"--auto-recover", "--max-retries", "2", "--restart-backoff", "0.01",
                              "--log-dir", logs.path(), "--", "1"}),
                      60s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(lines_with(r.out, " ok").size() == 3);
  CHECK_THAT(r.out, Contains("[node 0] node 0 attempt 0 ok\n"));
  CHECK_THAT(r.out, Contains("[node 1] node 1 attempt 1 ok\n"));
  CHECK_THAT(r.out, Contains("[node 2] node 2 attempt 0 ok\n"));
  CHECK(lines_with(r.err, "failing attempt 0 on node 1").size() == 1);
  CHECK_THAT(r.err, !Contains("ditask: job failed"));
  auto run = run_dir(logs);
  CHECK(names_in(run) == std::vector<std::string>{"attempt_0", "attempt_1"});
  CHECK(names_in(run / "attempt_0") ==
        std::vector<std::string>{"node_0.log", "node_1.log", "node_2.log"});
  CHECK(names_in(run / "attempt_1") == std::vector<std::string>{"node_1.log"});
}

TEST_CASE("auto-recover restarts a failing worker up to the limit while the others keep running",
          "[integration][supervision]") {
  TempDir logs;
  auto r = run_ditask(faults("fail_on_node", 3,
                             {"--auto-recover", "--max-retries", "2", "--restart-backoff", "0.01",
                              "--log-dir", logs.path(), "--", "1"}),
                      60s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK(lines_with(
            r.err,
            "[node 1] ditask: error: entry 'fail_on_node' failed: failing on purpose on node 1")
            .size() == 3);
  CHECK_THAT(line_starting(r.err, "ditask: job failed: "),
             StartsWith("ditask: job failed: node 1 (pid ") &&
                 Contains(", attempt 2) exited with code 1"));
  CHECK_THAT(line_starting(r.err, "ditask: stopped by the launcher: "),
             Contains("node 0 (pid ") && Contains("node 2 (pid "));
  CHECK_THAT(r.err, Contains("restarting in 0.01 s (1 of 2)") &&
                        Contains("restarting in 0.02 s (2 of 2)"));
  auto run = run_dir(logs);
  CHECK(names_in(run) == std::vector<std::string>{"attempt_0", "attempt_1", "attempt_2"});
  CHECK(names_in(run / "attempt_0") ==
        std::vector<std::string>{"node_0.log", "node_1.log", "node_2.log"});
  CHECK(names_in(run / "attempt_1") == std::vector<std::string>{"node_1.log"});
  CHECK(names_in(run / "attempt_2") == std::vector<std::string>{"node_1.log"});
}

TEST_CASE("auto-recover gives up after --max-retries and fails fast",
          "[integration][supervision]") {
  TempDir logs;
  auto r = run_ditask(faults("throw_error", 2,
                             {"--auto-recover", "--max-retries", "2", "--restart-backoff", "0.01",
                              "--log-dir", logs.path()}),
                      60s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  const auto failed = line_starting(r.err, "ditask: job failed: node ");
  REQUIRE_THAT(failed, Contains(", attempt 2) exited with code 1"));
  const std::string node = failed.substr(std::string("ditask: job failed: node ").size(), 1);
  CAPTURE(node);
  // attempts 0, 1 and 2 of the failing node each threw
  CHECK(lines_with(r.err, "[node " + node +
                              "] ditask: error: entry 'throw_error' failed: boom from node " + node)
            .size() == 3);
  auto run = run_dir(logs);
  CHECK(names_in(run) == std::vector<std::string>{"attempt_0", "attempt_1", "attempt_2"});
  for (const char* attempt : {"attempt_0", "attempt_1", "attempt_2"}) {
    CAPTURE(attempt);
    CHECK(std::filesystem::exists(run / attempt / ("node_" + node + ".log")));
  }
  CHECK_THAT(r.err, Contains("ditask: exit code 1\n"));
}

TEST_CASE("timeout (--timeout) stops the job and exits 124", "[integration][supervision]") {
  auto r = run_ditask(faults("hang", 2, {"--timeout", "1"}), 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 124);
  CHECK_THAT(r.err,
             Contains("ditask: job timed out after 1 s (--timeout); stopped every worker\n"));
  CHECK_THAT(line_starting(r.err, "ditask: stopped by the launcher: "),
             Contains("node 0 (pid ") && Contains("node 1 (pid "));
  CHECK_THAT(r.err, !Contains("job failed"));
  CHECK_THAT(r.err, Contains("ditask: exit code 124\n"));
}

TEST_CASE("a worker that exited 0 is never restarted, so its launcher closes its listening socket",
          "[integration][supervision]") {
  // Before, the launcher kept it for restarts that never come: a dial was accepted and never
  // answered (a restarted peer waited for a hello until --startup-timeout, on every retry).
  const std::vector<std::string> more = GENERATE(std::vector<std::string>{},
                                                 std::vector<std::string>{"--auto-recover", "--restart-backoff", "0"});
  CAPTURE(more);
  auto r = run_ditask(faults("dial_finished_peer", 2, more), 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(lines_with(r.out, "[node 1] RESULT refused").size() == 1);
}

TEST_CASE("a worker restarted after a peer finished becomes ready without it",
          "[integration][supervision]") {
  // Before, it waited for the finished peer until --startup-timeout (here far beyond the run's
  // own 60 s limit), failed, and was restarted to wait again. Over the mesh and over Redis.
  const bool redis = GENERATE(false, true);
  CAPTURE(redis);
  std::optional<RedisServer> server;
  std::vector<std::string> more = {"--auto-recover", "--restart-backoff", "0", "--startup-timeout", "600"};
  if (redis) {
    server.emplace();
    more.insert(more.end(), {"--mq-type", "redis", "--redis-port", server->port_text()});
  }
  auto r = run_ditask(faults("restart_after_peer_finished", 2, more), 60s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(lines_with(r.out, "[node 1] RESULT ready peers=0").size() == 1);
  CHECK(lines_with(r.out, "[node 1] RESULT not sent: node 0 finished (exited 0) before node 1 started: it is not "
                          "restarted").size() == 1);
  CHECK_THAT(r.err, Contains("node 1 (pid ") && Contains("attempt 0) exited with code 3; restarting"));
}

TEST_CASE("the installed example config auto_recover.json restarts node 0 once and succeeds",
          "[integration][supervision]") {
  // configs/ is installed: it may name only installed modules (echo_env), never test ones.
  auto r = run_ditask({"--config", std::string(DITASK_SOURCE_DIR) + "/configs/auto_recover.json"}, 30s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(lines_with(r.err, "restarting in 0.25 s (1 of 2)").size() == 1);
  CHECK(lines_with(r.out, "[node 0] node 0 attempt 1 ok").size() == 1);
  CHECK(lines_with(r.out, "[node 1] node 1 attempt 0 ok").size() == 1);
}
