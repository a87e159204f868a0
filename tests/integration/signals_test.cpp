// SPDX-License-Identifier: MIT
// Signals to the launcher: forwarded to the workers, second Ctrl-C escalates, SIGUSR1 becomes an
// event, SIGHUP is ignored, and SIGKILL of the launcher leaves no worker behind.
#include <csignal>
#include <filesystem>

#include <catch2/catch.hpp>

#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;

namespace {

/// Starts `workers` workers of `entry` and waits until each printed "ready pid=<pid>"; returns the
/// pids.
std::vector<pid_t> start_ready(DitaskProcess& p, const std::string& entry, int workers,
                               std::vector<std::string> more = {}) {
  p.start(faults(entry, workers, std::move(more)));
  p.require_line("] ready pid=", 30s, workers);
  auto pids = numbers_after(p.out(), "] ready pid=");
  REQUIRE(pids.size() == static_cast<std::size_t>(workers));
  return pids;
}

void check_all_gone(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    CAPTURE(pid);
    CHECK(wait_process_gone(pid, 5s));
  }
}

}  // namespace

TEST_CASE("SIGINT to the launcher stops every worker and exits 130", "[integration][signals]") {
  DitaskProcess p;
  auto pids = start_ready(p, "hang_ready", 2);
  p.send_signal(SIGINT);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 130);
  CHECK_THAT(r.err, Contains("ditask: stopped by SIGINT; forwarded it to every worker\n"));
  CHECK_THAT(r.err, !Contains("job failed"));
  CHECK_THAT(r.err, Contains("ditask: stopped by the launcher: ") && Contains("node 0 (pid ") &&
                        Contains("node 1 (pid "));
  CHECK_THAT(r.err, Contains("ditask: exit code 130\n"));
  check_all_gone(pids);
}

TEST_CASE("SIGTERM to the launcher stops every worker and exits 143", "[integration][signals]") {
  DitaskProcess p;
  auto pids = start_ready(p, "hang_ready", 2);
  p.send_signal(SIGTERM);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 143);
  CHECK_THAT(r.err, Contains("ditask: stopped by SIGTERM; forwarded it to every worker\n"));
  CHECK_THAT(r.err, !Contains("job failed"));
  check_all_gone(pids);
}

TEST_CASE("a second SIGINT kills workers that ignore the first", "[integration][signals]") {
  DitaskProcess p;
  // The grace period outlasts the harness timeout: only the escalation can end this run in time.
  auto pids = start_ready(p, "ignore_int_ready", 2, {"--grace-period", "100"});
  p.send_signal(SIGINT);
  p.require_line("] ignored SIGINT", 30s, 2);  // the first one reached both workers
  CHECK(p.running());
  p.send_signal(SIGINT);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 130);
  CHECK_THAT(r.err, !Contains("job failed"));
  check_all_gone(pids);
}

TEST_CASE("SIGUSR1 to the launcher becomes an event in every worker", "[integration][signals]") {
  DitaskProcess p;
  p.start(faults("usr1_event", 2));
  p.require_line("] ready", 30s, 2);
  p.send_signal(SIGUSR1);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(lines_with(r.out, "got SIGUSR1 event").size() == 2);
  CHECK_THAT(r.out,
             Contains("[node 0] got SIGUSR1 event\n") && Contains("[node 1] got SIGUSR1 event\n"));
}

TEST_CASE("SIGHUP to the launcher is ignored", "[integration][signals]") {
  DitaskProcess p;
  p.start(faults("usr1_event", 2));
  p.require_line("] ready", 30s, 2);
  // SIGHUP (1) is delivered before SIGUSR1 (10): had it ended the launcher or a worker, the run
  // would end with 129 or a failed worker instead of both workers seeing the event.
  p.send_signal(SIGHUP);
  p.send_signal(SIGUSR1);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(lines_with(r.out, "got SIGUSR1 event").size() == 2);
  CHECK_THAT(r.err, !Contains("SIGHUP"));
}

TEST_CASE("SIGHUP leaves the launcher running until it is stopped", "[integration][signals]") {
  DitaskProcess p;
  auto pids = start_ready(p, "hang_ready", 2);
  p.send_signal(SIGHUP);
  p.send_signal(SIGTERM);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 143);  // not 129: SIGHUP neither ended the launcher nor reached a worker
  CHECK_THAT(r.err, Contains("ditask: stopped by SIGTERM"));
  CHECK_THAT(r.err, !Contains("job failed"));
  check_all_gone(pids);
}

TEST_CASE("SIGKILL of the launcher leaves no worker alive", "[integration][signals]") {
  DitaskProcess p;
  auto pids = start_ready(p, "hang_ready", 3);
  p.send_signal(SIGKILL);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 137);
  check_all_gone(pids);
}

TEST_CASE("workers that ignore SIGTERM get SIGKILL after the grace period",
          "[integration][signals]") {
  DitaskProcess p;
  auto pids = start_ready(p, "ignore_int_ready", 2, {"--grace-period", "0.2"});
  p.send_signal(SIGTERM);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 143);
  CHECK(lines_with(r.out, "] ignored SIGTERM").size() == 2);  // forwarded, ignored, then killed
  CHECK_THAT(r.err, Contains("ditask: stopped by SIGTERM"));
  CHECK_THAT(r.err, !Contains("job failed"));
  CHECK_THAT(r.err, Contains("ditask: stopped by the launcher: ") && Contains("node 0 (pid ") &&
                        Contains("node 1 (pid "));
  check_all_gone(pids);
}

TEST_CASE("auto-recover never restarts workers the launcher stopped", "[integration][signals]") {
  TempDir logs;
  DitaskProcess p;
  auto pids =
      start_ready(p, "hang_ready", 2,
                  {"--auto-recover", "--restart-backoff", "0.01", "--log-dir", logs.path()});
  p.send_signal(SIGINT);
  auto r = p.wait(30s);
  INFO(describe(r));
  CHECK(r.exit_code == 130);
  CHECK(lines_with(r.out, "ready pid=").size() == 2);
  CHECK_THAT(r.err, !Contains("restarting"));
  std::vector<std::string> runs;
  for (const auto& run : std::filesystem::directory_iterator(logs.path())) {
    for (const auto& attempt : std::filesystem::directory_iterator(run.path())) {
      runs.push_back(attempt.path().filename().string());
    }
  }
  CHECK(runs == std::vector<std::string>{"attempt_0"});
  check_all_gone(pids);
}

TEST_CASE("SIGTERM while a restart is pending ends the job without that restart",
          "[integration][signals]") {
  DitaskProcess p;
  p.start(faults("fail_on_node", 3, {"--auto-recover", "--restart-backoff", "100", "--", "1"}));
  // The backoff is capped at 30 s; the harness gives the run less than that.
  p.require_line("launcher: node 1 (pid ", 20s);
  CHECK(p.count_lines("restarting in 30 s (1 of 3)") == 1);
  p.send_signal(SIGTERM);
  auto r = p.wait(20s);
  INFO(describe(r));
  CHECK(r.exit_code == 143);
  CHECK(lines_with(r.err, "failing on purpose on node 1").size() == 1);
  CHECK_THAT(r.err, !Contains("job failed"));
  CHECK_THAT(r.err, Contains("ditask: stopped by SIGTERM"));
}

TEST_CASE("SIGTERM while the only worker waits for its restart ends the job at once",
          "[integration][signals]") {
  // No worker is alive, so the signal ends the job within its own handler: nothing may keep the
  // launcher waiting for another signal (it did: it exited only on a second one).
  DitaskProcess p;
  p.start(faults("fail_first_attempt", 1, {"--auto-recover", "--restart-backoff", "100", "--", "0"}));
  p.require_line("restarting in 30 s (1 of 3)", 20s);  // capped at 30 s; the harness waits less
  p.send_signal(SIGTERM);
  auto r = p.wait(20s);
  INFO(describe(r));
  CHECK(r.exit_code == 143);
  CHECK_THAT(r.err, Contains("ditask: stopped by SIGTERM"));
  CHECK_THAT(r.err, !Contains("job failed"));
  CHECK(lines_with(r.out, "attempt 1 ok").empty());
}
