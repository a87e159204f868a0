// SPDX-License-Identifier: MIT
// --summary-json: the end-of-run summary as JSON, read back and held against the text summary,
// the module's own counters, the launcher's exit code and the pids the workers printed.
#include <signal.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json read_summary(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  json summary = json::parse(in, nullptr, false);
  REQUIRE_FALSE(summary.is_discarded());
  return summary;
}

/// The worker entry of node `node_id` in the summary.
const json& worker(const json& summary, std::int64_t node_id) {
  for (const auto& w : summary.at("workers")) {
    if (w.at("node_id") == node_id) {
      return w;
    }
  }
  FAIL("no worker with node id " << node_id << " in " << summary.dump());
  throw std::logic_error("unreachable");
}

/// The text after `prefix` on the one stderr line that starts with it ("" when none).
std::string after(const std::string& text, const std::string& prefix) {
  for (const auto& line : split_lines(text)) {
    if (line.rfind(prefix, 0) == 0) {
      return line.substr(prefix.size());
    }
  }
  return "";
}

/// What the launcher measured: CPU time and peak memory are numbers, never null, for a process that ran.
void check_usage(const json& entry) {
  CHECK(entry.at("cpu_user_seconds").is_number());
  CHECK(entry.at("cpu_system_seconds").is_number());
  REQUIRE(entry.at("peak_rss_bytes").is_number_integer());
  CHECK(entry.at("peak_rss_bytes").get<std::int64_t>() > 1024 * 1024);  // a process that ran uses more
}

}  // namespace

TEST_CASE("summary JSON: says what the text summary says: the failure, the stopped workers, the exit code",
          "[integration][summary]") {
  TempDir dir;
  const std::string path = dir.file("summary.json");
  auto r = run_ditask(faults("segv_on_node", 3, {"--summary-json", path}), 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 128 + SIGSEGV);
  const json s = read_summary(path);
  INFO(s.dump(2));
  CHECK(s.at("format") == "ditask-summary/1");
  CHECK(s.at("exit_code") == r.exit_code);
  CHECK(after(r.err, "ditask: exit code ") == std::to_string(s.at("exit_code").get<int>()));
  CHECK(s.at("stop").at("cause") == "failure");
  CHECK(s.at("world_size") == 3);
  const json& failure = s.at("failure");
  CHECK(after(r.err, "ditask: job failed: ") == failure.at("description").get<std::string>());
  CHECK(failure.at("node_id") == 1);
  CHECK(failure.at("signal") == "SIGSEGV");
  CHECK(failure.at("exit_code").is_null());
  // "stopped by the launcher: node 2 (pid 4712), node 0 (pid 4710)": the same nodes and pids.
  const std::string stopped = after(r.err, "ditask: stopped by the launcher: ");
  REQUIRE(s.at("workers").size() == 3);
  for (const auto& w : s.at("workers")) {
    INFO("node " << w.at("node_id"));
    REQUIRE(w.at("attempts").size() == 1);
    const json& a = w.at("attempts")[0];
    check_usage(a);
    check_usage(w);
    CHECK(w.at("restarts") == 0);
    CHECK(w.at("events").is_null());  // these entries never start a task: nothing to count
    const std::string named =
        "node " + std::to_string(w.at("node_id").get<int>()) + " (pid " + std::to_string(a.at("pid").get<int>()) + ")";
    if (w.at("node_id") == 1) {
      CHECK(w.at("outcome") == "failed");
      CHECK(w.at("signal") == "SIGSEGV");
      CHECK(a.at("pid") == failure.at("pid"));
      CHECK_THAT(stopped, !Contains(named));
    } else {
      CHECK(w.at("outcome") == "stopped");
      CHECK(w.at("stopped_by_launcher") == true);
      CHECK(w.at("signal") == "SIGTERM");
      CHECK_THAT(stopped, Contains(named));
    }
  }
}

TEST_CASE("summary JSON: counts each worker's calls as the module's own RpcStats do, and its events",
          "[integration][summary]") {
  TempDir dir;
  const std::string path = dir.file("calls.json");
  auto r = run_ditask({"--package", module_path("rpc_tests"), "--main", "rpc_basic", "--parallel-workers", "2",
                       "--summary-json", path},
                      90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const json s = read_summary(path);
  INFO(s.dump(2));
  CHECK(s.at("exit_code") == 0);
  CHECK(s.at("stop").at("cause") == "none");
  CHECK(s.at("failure").is_null());
  // The module printed its own counters last: "[node 1] CHECK stats calls=23 answered=15 failed=8 served=1".
  const auto calls = numbers_after(r.out, "CHECK stats calls=");
  const auto answered = numbers_after(r.out, " answered=");
  const auto failed = numbers_after(r.out, " failed=");
  REQUIRE(calls.size() == 1);
  REQUIRE(answered.size() == 1);
  REQUIRE(failed.size() == 1);
  const json& caller = worker(s, 1);
  CHECK(caller.at("outcome") == "succeeded");
  CHECK(caller.at("exit_code") == 0);
  CHECK(caller.at("calls").at("made") == calls[0]);
  CHECK(caller.at("calls").at("answered") == answered[0]);
  CHECK(caller.at("calls").at("failed") == failed[0]);
  const json& callee = worker(s, 0);
  // Node 0 served node 1's calls that reached it (those refused on node 1 never left it).
  CHECK(callee.at("calls").at("served").get<std::int64_t>() > 0);
  CHECK(callee.at("calls").at("made") == 0);
  for (const auto* w : {&caller, &callee}) {
    check_usage(*w);
    const json& events = w->at("events");
    CHECK(events.at("sent").get<std::int64_t>() > 0);      // calls and replies travel as events
    CHECK(events.at("received").get<std::int64_t>() > 0);
    CHECK(events.at("lost") == 0);
    CHECK(events.at("dropped") == 0);
  }
}

TEST_CASE("summary JSON: keeps every attempt of a restarted worker, and the counters of workers stopped by SIGTERM",
          "[integration][summary]") {
  TempDir dir;
  SECTION("a restart") {
    const std::string path = dir.file("restart.json");
    auto r = run_ditask(faults("fail_first_attempt", 2, {"--auto-recover", "--restart-backoff", "0",
                                                         "--summary-json", path}),
                        60s);
    INFO(describe(r));
    REQUIRE(r.exit_code == 0);
    const json s = read_summary(path);
    INFO(s.dump(2));
    const json& restarted = worker(s, 0);
    CHECK(restarted.at("restarts") == 1);
    CHECK(restarted.at("outcome") == "succeeded");
    REQUIRE(restarted.at("attempts").size() == 2);
    CHECK(restarted.at("attempts")[0].at("exit_code") == 1);
    CHECK(restarted.at("attempts")[1].at("exit_code") == 0);
    CHECK(restarted.at("attempts")[0].at("pid") != restarted.at("attempts")[1].at("pid"));
    CHECK(worker(s, 1).at("restarts") == 0);
    // CPU time adds up over the attempts.
    const double total = restarted.at("cpu_user_seconds").get<double>() + restarted.at("cpu_system_seconds").get<double>();
    double sum = 0;
    for (const auto& a : restarted.at("attempts")) {
      sum += a.at("cpu_user_seconds").get<double>() + a.at("cpu_system_seconds").get<double>();
    }
    CHECK(total == Approx(sum));
  }
  SECTION("stopped by SIGTERM: a worker with a task still writes its counters") {
    const std::string path = dir.file("term.json");
    DitaskProcess job;
    job.start(faults("ticks_then_hang", 3, {"--summary-json", path, "--", "25"}));
    job.require_line("sent 25 ticks", 60s);
    job.require_line("got 25 ticks", 60s, 2);
    job.send_signal(SIGTERM);
    auto r = job.wait(60s);
    INFO(describe(r));
    REQUIRE(r.exit_code == 128 + SIGTERM);
    const json s = read_summary(path);
    INFO(s.dump(2));
    CHECK(s.at("stop").at("cause") == "signal");
    CHECK(s.at("stop").at("signal") == "SIGTERM");
    CHECK(s.at("exit_code") == 128 + SIGTERM);
    for (const auto& w : s.at("workers")) {
      INFO("node " << w.at("node_id"));
      CHECK(w.at("outcome") == "stopped");
      REQUIRE(w.at("events").is_object());
      CHECK(w.at("events").at("dropped") == 0);
      if (w.at("node_id") == 0) {
        // A receiver stopped before its acknowledgement went (it rides within 100 ms) leaves its
        // ticks counted lost by node 0: the summary says what node 0's warnings said.
        std::int64_t warned = 0;
        for (const auto& line : lines_with(r.err, " events sent to it were not acknowledged")) {
          warned += std::stol(line.substr(line.rfind("); ") + 3));
        }
        CHECK(w.at("events").at("lost") == warned);
        CHECK(w.at("events").at("sent").get<std::int64_t>() >= 2 * 25);  // to each of two peers
      } else {
        CHECK(w.at("events").at("received").get<std::int64_t>() >= 25);
      }
    }
  }
}

TEST_CASE("summary JSON: refuses a file it could not write before any worker starts",
          "[integration][summary][bad-input]") {
  TempDir dir;
  SECTION("no such folder") {
    auto r = run_ditask(faults("hang_ready", 2, {"--summary-json", dir.file("missing/summary.json")}), 30s);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("ditask: error: --summary-json '" + dir.file("missing/summary.json") +
                               "': no folder '" + dir.file("missing") + "'"));
    CHECK_THAT(r.err, Contains("hint: create it first"));
    CHECK(r.out.empty());  // no worker ran
  }
  SECTION("a folder") {
    auto r = run_ditask(faults("hang_ready", 2, {"--summary-json", dir.path()}), 30s);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("ditask: error: --summary-json '" + dir.path() + "' is a folder"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("summary JSON: replaces {node} and {run}, so each launcher of a job can write its own file",
          "[integration][summary]") {
  TempDir dir;
  auto r = run_ditask(faults("noop", 2, {"--node-ids", "4", "--run-id", "r7", "--summary-json",
                                         dir.file("summary-{run}-{node}.json")}),
                      30s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const json s = read_summary(dir.file("summary-r7-4.json"));
  CHECK(s.at("run_id") == "r7");
  REQUIRE(s.at("workers").size() == 2);
  CHECK(s.at("workers")[0].at("node_id") == 4);
  CHECK(s.at("workers")[1].at("node_id") == 5);
}

TEST_CASE("summary JSON: a worker killed without warning has null counters, also while the status line runs",
          "[integration][summary]") {
  TempDir dir;
  const std::string path = dir.file("killed.json");
  DitaskProcess job;
  // --status on: the workers also write their counters every second, for the line.
  job.start(faults("ticks_then_hang", 3, {"--status", "on", "--summary-json", path, "--", "5"}), {{"TMPDIR", dir.path()}});
  job.require_line("got 5 ticks pid=", 60s, 2);
  pid_t victim = 0;
  for (const auto& line : lines_with(job.out(), "got 5 ticks pid=")) {
    if (line.rfind("[node 1]", 0) == 0) {
      victim = numbers_after(line, "pid=").at(0);
    }
  }
  REQUIRE(victim > 0);
  auto live_written = [&] {
    for (const auto& folder : std::filesystem::directory_iterator(dir.path())) {
      if (std::filesystem::exists(folder.path() / "node_1.attempt_0.json.live")) {
        return true;
      }
    }
    return false;
  };
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!live_written() && std::chrono::steady_clock::now() < until) {
    job.wait_for_line("(no such line)", 50ms);
  }
  REQUIRE(live_written());
  REQUIRE(::kill(victim, SIGKILL) == 0);
  auto r = job.wait(60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 128 + SIGKILL);
  const json s = read_summary(path);
  INFO(s.dump(2));
  CHECK(worker(s, 1).at("signal") == "SIGKILL");
  CHECK(worker(s, 1).at("events").is_null());  // what it wrote for the line is not its account
  CHECK(worker(s, 1).at("calls").is_null());
  CHECK(worker(s, 0).at("events").is_object());  // the others ended by SIGTERM and wrote theirs
}
