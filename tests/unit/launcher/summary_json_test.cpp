// SPDX-License-Identifier: MIT
// --summary-json's document from a report and the workers' counter files, with no process.
#include "summary_json.hpp"

#include <signal.h>

#include <fstream>

#include <catch2/catch.hpp>

#include "wait_status.hpp"

using ditask::launcher::AttemptRecord;
using ditask::launcher::Plan;
using ditask::launcher::Report;
using ditask::launcher::ResourceUse;
using ditask::launcher::WorkerRecord;
using ditask::launcher::WorkerStatsFolder;
using ditask::test::exited;
using ditask::test::killed;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  REQUIRE(out.good());
}

Plan plan_of(int workers) {
  Plan plan;
  plan.run_id = "r1";
  plan.world_size = workers;
  for (int i = 0; i < workers; ++i) {
    ditask::launcher::WorkerPlan w;
    w.node_id = 10 + i;
    w.rank = i;
    w.local_id = i;
    plan.workers.push_back(w);
  }
  return plan;
}

}  // namespace

TEST_CASE("summary json: attempts add up, a worker that wrote nothing has null counters, and every outcome is named",
          "[summary]") {
  WorkerStatsFolder stats;
  const Plan plan = plan_of(4);
  Report report;
  report.stopping = true;
  report.cause = ditask::launcher::StopCause::signal;
  report.signal = SIGINT;
  // Node 10: two attempts, both wrote counters; the second was stopped by the launcher.
  report.workers.push_back(WorkerRecord{10, 1,
                                        {AttemptRecord{0, 100, exited(3), ResourceUse{1.0, 0.5, 4096}},
                                         AttemptRecord{1, 101, killed(SIGINT), ResourceUse{2.0, 0.25, 8192}}},
                                        true, false});
  write(stats.file_for(10, 0), R"({"events":{"sent":3,"received":4,"lost":1,"dropped":0,"unhandled":0},)"
                               R"("calls":{"made":2,"answered":1,"failed":1,"timed_out":0,"served":5}})");
  write(stats.file_for(10, 1), R"({"events":{"sent":10,"received":20,"lost":0,"dropped":2,"unhandled":1},)"
                               R"("calls":{"made":1,"answered":1,"failed":0,"timed_out":0,"served":0}})");
  // Node 11: killed, wrote half a file.
  report.workers.push_back(WorkerRecord{11, 0, {AttemptRecord{0, 102, killed(SIGKILL), ResourceUse{0.1, 0.1, 1024}}}, false, false});
  write(stats.file_for(11, 0), R"({"events":{"sent")");
  // Node 12: never started (the stop came first); node 13: did not die after SIGKILL.
  report.workers.push_back(WorkerRecord{12, 0, {}, false, false});
  report.workers.push_back(WorkerRecord{13, 0, {}, true, true});

  const auto s = ditask::launcher::summary_json(report, plan, 1.5, stats);
  INFO(s.dump(2));
  CHECK(s.at("exit_code") == 128 + SIGINT);
  CHECK(s.at("stop").at("cause") == "signal");
  CHECK(s.at("stop").at("signal") == "SIGINT");
  CHECK(s.at("failure").is_null());
  CHECK(s.at("elapsed_seconds") == 1.5);
  const auto& w = s.at("workers");
  REQUIRE(w.size() == 4);

  CHECK(w[0].at("node_id") == 10);
  CHECK(w[0].at("outcome") == "stopped");
  CHECK(w[0].at("restarts") == 1);
  CHECK(w[0].at("signal") == "SIGINT");
  CHECK(w[0].at("exit_code").is_null());
  CHECK(w[0].at("cpu_user_seconds") == 3.0);
  CHECK(w[0].at("cpu_system_seconds") == 0.75);
  CHECK(w[0].at("peak_rss_bytes") == 8192);  // the largest attempt, not a sum
  CHECK(w[0].at("events").at("sent") == 13);
  CHECK(w[0].at("events").at("received") == 24);
  CHECK(w[0].at("events").at("lost") == 1);
  CHECK(w[0].at("events").at("dropped") == 2);
  CHECK(w[0].at("calls").at("made") == 3);
  CHECK(w[0].at("calls").at("served") == 5);
  REQUIRE(w[0].at("attempts").size() == 2);
  CHECK(w[0].at("attempts")[0].at("exit_code") == 3);
  CHECK(w[0].at("attempts")[0].at("pid") == 100);
  CHECK(w[0].at("attempts")[1].at("events").at("sent") == 10);

  CHECK(w[1].at("outcome") == "failed");
  CHECK(w[1].at("signal") == "SIGKILL");
  CHECK(w[1].at("events").is_null());
  CHECK(w[1].at("calls").is_null());
  CHECK(w[1].at("attempts")[0].at("events").is_null());
  CHECK(w[1].at("peak_rss_bytes") == 1024);

  CHECK(w[2].at("outcome") == "not started");
  CHECK(w[2].at("attempts").empty());
  CHECK(w[2].at("cpu_user_seconds").is_null());
  CHECK(w[2].at("exit_code").is_null());

  CHECK(w[3].at("outcome") == "running");
  CHECK(w[3].at("signal").is_null());
}

TEST_CASE("summary json: {node} and {run} in the path name this launcher's file", "[summary]") {
  const Plan plan = plan_of(2);
  CHECK(ditask::launcher::summary_path("out/{run}/s-{node}.json", plan) == "out/r1/s-10.json");
  CHECK(ditask::launcher::summary_path("s.json", plan) == "s.json");
}

TEST_CASE("summary json: the workers' folder goes with the launcher", "[summary]") {
  std::string file;
  {
    WorkerStatsFolder stats;
    file = stats.file_for(3, 0);
    write(file, "{}");
    CHECK(stats.read(3, 0).is_object());
    CHECK(stats.read(3, 1).is_null());
  }
  CHECK_FALSE(std::ifstream(file).good());
}

TEST_CASE("summary json: a worker's stderr that is not UTF-8 is written, its bad bytes replaced", "[summary]") {
  WorkerStatsFolder stats;
  Report report;
  report.failure = ditask::launcher::Failure{0, 100, 0, exited(1), {"ok", "bad \xff\xfe bytes"}, ""};
  report.cause = ditask::launcher::StopCause::failure;
  report.stopping = true;
  const std::string path = stats.file_for(99, 0) + ".summary";
  ditask::launcher::write_summary_json(path, ditask::launcher::summary_json(report, plan_of(1), 0.5, stats));
  std::ifstream in(path);
  const auto back = nlohmann::json::parse(in);
  CHECK(back.at("failure").at("last_stderr").at(0) == "ok");
  CHECK(back.at("failure").at("last_stderr").at(1) == "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes");  // U+FFFD twice
  CHECK_FALSE(std::ifstream(path + ".tmp").good());
}
