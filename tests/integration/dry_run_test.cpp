// SPDX-License-Identifier: MIT
// --dry-run: the plan as JSON, where each value came from, and nothing started or opened.
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using nlohmann::json;

namespace {

json parse_plan(const RunResult& r) {
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  json plan;
  REQUIRE_NOTHROW(plan = json::parse(r.out));
  REQUIRE(plan.is_object());
  return plan;
}

}  // namespace

TEST_CASE("dry-run prints the plan as JSON without opening the package", "[integration][dry-run]") {
  auto r = run_ditask({"--dry-run", "--package", "/nonexistent/libx.so", "--parallel-workers", "3",
                       "--topology", "star", "--node-ids", "5"},
                      20s);
  INFO(describe(r));
  CHECK(r.err.empty());
  auto plan = parse_plan(r);
  CHECK(plan["platform"] == "local");
  CHECK(plan["package"] == "/nonexistent/libx.so");
  CHECK(plan["topology"] == "star");
  const auto& workers = plan["workers"];
  REQUIRE(workers.is_array());
  REQUIRE(workers.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const auto& w = workers[i];
    CHECK(w["node_id"] == 5 + static_cast<int>(i));
    CHECK(w["local_id"] == static_cast<int>(i));
    CHECK(w["rank"] == static_cast<int>(i));
    CHECK(w["env"]["DITASK_NODE_ID"] == std::to_string(5 + i));
    CHECK(w["env"]["DITASK_TOPOLOGY"] == "star");
    CHECK(w["env"]["RANK"] == std::to_string(i));
  }
  // star: worker 0 dials nobody, every other worker dials worker 0.
  CHECK(workers[0]["attach_to"] == json::array());
  CHECK(workers[1]["attach_to"] == json::array({workers[0]["listen"]}));
  CHECK(workers[2]["attach_to"] == json::array({workers[0]["listen"]}));
  CHECK(workers[1]["env"]["DITASK_ATTACH_TO"] == workers[0]["listen"]);

  const auto& options = plan["options"];
  CHECK(options["topology"]["source"] == "command line");
  CHECK(options["topology"]["value"] == "star");
  CHECK(options["parallel-workers"]["source"] == "command line");
  CHECK(options["parallel-workers"]["value"] == "3");
  CHECK(options["node-ids"]["source"] == "command line");
  CHECK(options["protocol"]["source"] == "default");
  CHECK(options["protocol"]["value"] == "tcp");
}

TEST_CASE("dry-run mesh plan: each worker dials every earlier worker", "[integration][dry-run]") {
  auto plan = parse_plan(run_ditask({"--dry-run", "--package", "/nonexistent/libx.so",
                                     "--parallel-workers", "3", "--ports", "40000"},
                                    20s));
  const auto& workers = plan["workers"];
  REQUIRE(workers.size() == 3);
  CHECK(workers[0]["listen"] == "tcp://127.0.0.1:40000");
  CHECK(workers[2]["listen"] == "tcp://127.0.0.1:40002");
  CHECK(workers[0]["attach_to"] == json::array());
  CHECK(workers[1]["attach_to"] == json::array({"tcp://127.0.0.1:40000"}));
  CHECK(workers[2]["attach_to"] == json::array({"tcp://127.0.0.1:40000", "tcp://127.0.0.1:40001"}));
  CHECK(plan["options"]["topology"]["source"] == "default");
  CHECK(plan["options"]["topology"]["value"] == "mesh");
}

TEST_CASE("dry-run shows DITASK_LAUNCH_* values with source 'environment'",
          "[integration][dry-run]") {
  auto plan = parse_plan(run_ditask({"--dry-run", "--package", "/nonexistent/libx.so"}, 20s,
                                    {{"DITASK_LAUNCH_PARALLEL_WORKERS", "2"}}));
  CHECK(plan["workers"].size() == 2);
  CHECK(plan["options"]["parallel-workers"]["source"] == "environment");
  CHECK(plan["options"]["parallel-workers"]["value"] == "2");
}

TEST_CASE("dry-run: the command line beats DITASK_LAUNCH_*", "[integration][dry-run]") {
  auto plan = parse_plan(
      run_ditask({"--dry-run", "--package", "/nonexistent/libx.so", "--parallel-workers", "4"}, 20s,
                 {{"DITASK_LAUNCH_PARALLEL_WORKERS", "2"}}));
  CHECK(plan["workers"].size() == 4);
  CHECK(plan["options"]["parallel-workers"]["source"] == "command line");
  CHECK(plan["options"]["parallel-workers"]["value"] == "4");
}

TEST_CASE("dry-run: config file values show source 'config file' and lose to the environment",
          "[integration][dry-run]") {
  TempDir dir;
  auto config =
      dir.write("job.json", R"({"parallel_workers": 2, "topology": "alone", "labels": ["x", "y"],
                                         "package": "/nonexistent/libx.so"})");
  auto plan = parse_plan(run_ditask({"--dry-run", "--config", config}, 20s));
  CHECK(plan["workers"].size() == 2);
  CHECK(plan["package"] == "/nonexistent/libx.so");
  const auto& options = plan["options"];
  CHECK(options["parallel-workers"]["source"] == "config file");
  CHECK(options["parallel-workers"]["value"] == "2");
  CHECK(options["topology"]["source"] == "config file");
  CHECK(options["topology"]["value"] == "alone");
  CHECK(options["labels"]["source"] == "config file");
  CHECK(options["package"]["source"] == "config file");
  CHECK(plan["workers"][1]["attach_to"] == json::array());
  CHECK(plan["workers"][1]["labels"] == json::array({"x", "y"}));

  auto env_wins = parse_plan(run_ditask({"--dry-run", "--config", config}, 20s,
                                        {{"DITASK_LAUNCH_PARALLEL_WORKERS", "3"}}));
  CHECK(env_wins["workers"].size() == 3);
  CHECK(env_wins["options"]["parallel-workers"]["source"] == "environment");
  CHECK(env_wins["options"]["topology"]["source"] == "config file");
}

TEST_CASE("dry-run hides the token everywhere it prints", "[integration][dry-run]") {
  const std::string secret = "never-print-me-0123456789";
  for (const auto& [args, env] : std::vector<std::pair<std::vector<std::string>, Env>>{
           {{"--token", secret}, {}},
           {{}, {{"DITASK_TOKEN", secret}}},
           {{}, {{"DITASK_LAUNCH_TOKEN", secret}}}}) {
    std::vector<std::string> all = {"--dry-run", "--package", "/nonexistent/libx.so",
                                    "--parallel-workers", "2"};
    all.insert(all.end(), args.begin(), args.end());
    auto r = run_ditask(all, 20s, env);
    INFO(describe(r));
    CHECK(r.out.find(secret) == std::string::npos);
    CHECK(r.err.find(secret) == std::string::npos);
    CHECK(r.err.empty());  // 25 bytes: no short-token warning
    auto plan = parse_plan(r);
    CHECK(plan["mesh"]["token"] == "<hidden>");
    CHECK(plan["options"]["token"]["value"] == "<hidden>");
    for (const auto& w : plan["workers"]) {
      auto worker_plan = json::parse(w["env"]["DITASK_PLAN"].get<std::string>());
      CHECK(worker_plan["mesh"]["token"] == "<hidden>");
    }
  }
}

TEST_CASE("dry-run warns about a token shorter than 16 bytes", "[integration][dry-run]") {
  auto r = run_ditask({"--dry-run", "--package", "/nonexistent/libx.so", "--token", "tiny"}, 20s);
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(r.err == "ditask: warning: --token is shorter than 16 bytes\n");
  CHECK(r.out.find("tiny") == std::string::npos);
}

TEST_CASE("dry-run shows the mesh settings, run id and what workers get in DITASK_PLAN",
          "[integration][dry-run]") {
  auto plan = parse_plan(run_ditask({"--dry-run",
                                     "--package",
                                     "/nonexistent/libx.so",
                                     "--parallel-workers",
                                     "2",
                                     "--ports",
                                     "40000",
                                     "--topology",
                                     "star",
                                     "--relay",
                                     "--startup-timeout",
                                     "5",
                                     "--max-frame-bytes",
                                     "1M",
                                     "--send-queue-bytes",
                                     "128K",
                                     "--send-timeout",
                                     "2.5",
                                     "--send-policy",
                                     "drop"},
                                    20s, {{"DITASK_RUN_ID", "job-42"}}));
  CHECK(plan["run_id"] == "job-42");
  CHECK(plan["run_id_explicit"] == true);
  CHECK(plan["options"]["run-id"]["source"] == "environment");
  const json mesh = {{"startup_timeout_s", 5.0},   {"max_frame_bytes", 1048576},
                     {"send_queue_bytes", 131072}, {"send_timeout_s", 2.5},
                     {"send_policy", "drop"},      {"relay", true}};
  CHECK(plan["mesh"] == mesh);
  CHECK(plan["options"]["max-frame-bytes"]["value"] == "1M");
  auto worker_plan = json::parse(plan["workers"][1]["env"]["DITASK_PLAN"].get<std::string>());
  CHECK(worker_plan["mesh"] == mesh);
  CHECK(worker_plan["run_id"] == "job-42");
  CHECK(worker_plan["run_id_explicit"] == true);
  CHECK(worker_plan["topology"] == "star");
  CHECK(worker_plan["nodes"] == json::parse(R"([
    {"node_id": 0, "local_id": 0, "listen": "tcp://127.0.0.1:40000"},
    {"node_id": 1, "local_id": 1, "listen": "tcp://127.0.0.1:40001"}])"));
  CHECK(plan["workers"][0]["env"]["DITASK_RUN_ID"] == "job-42");

  SECTION("--run-id beats DITASK_RUN_ID; without either the id is fresh") {
    auto given = parse_plan(
        run_ditask({"--dry-run", "--package", "/nonexistent/libx.so", "--run-id", "mine"}, 20s,
                   {{"DITASK_RUN_ID", "job-42"}}));
    CHECK(given["run_id"] == "mine");
    CHECK(given["run_id_explicit"] == true);
    auto fresh = parse_plan(run_ditask({"--dry-run", "--package", "/nonexistent/libx.so"}, 20s));
    CHECK(fresh["run_id_explicit"] == false);
    CHECK(fresh["options"]["run-id"]["source"] == "default");
    CHECK(fresh["options"]["run-id"]["value"] == fresh["run_id"]);
  }
}
