// SPDX-License-Identifier: MIT
// The plan: node ids, ranks, listen addresses, dial lists and each worker's contract environment.
#include "ditask/launcher/plan.hpp"

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "worker_options.hpp"
#include <nlohmann/json.hpp>

#include "ditask/error.hpp"
#include "ditask/launcher/options.hpp"

#include "listen_sockets.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using ditask::launcher::Options;
using ditask::launcher::Plan;
using ditask::launcher::plan_layout;
using ditask::launcher::plan_wiring;

namespace {

using Strings = std::vector<std::string>;
using Ints = std::vector<std::int64_t>;

using ditask::test::workers;

Plan wired(const Options& options, const std::string& run_id = "RUN") {
  Plan plan = plan_layout(options, run_id);
  plan_wiring(plan, options);
  return plan;
}

Ints node_ids(const Plan& plan) {
  Ints out;
  for (const auto& w : plan.workers) {
    out.push_back(w.node_id);
  }
  return out;
}

Ints ranks(const Plan& plan) {
  Ints out;
  for (const auto& w : plan.workers) {
    out.push_back(w.rank);
  }
  return out;
}

Strings listens(const Plan& plan) {
  Strings out;
  for (const auto& w : plan.workers) {
    out.push_back(w.listen);
  }
  return out;
}

}  // namespace

TEST_CASE("node ids: default, one base, or one per worker", "[launcher][plan]") {
  Options o = workers(3);
  CHECK(node_ids(plan_layout(o, "r")) == Ints{0, 1, 2});
  o.node_ids = {5};
  CHECK(node_ids(plan_layout(o, "r")) == Ints{5, 6, 7});
  o.node_ids = {3, 1, 8};
  CHECK(node_ids(plan_layout(o, "r")) == Ints{3, 1, 8});
}

TEST_CASE("local ids and ranks are dense, whatever the node ids", "[launcher][plan]") {
  Options o = workers(3);
  o.node_ids = {10, 20, 30};
  const Plan plan = plan_layout(o, "r");
  CHECK(ranks(plan) == Ints{0, 1, 2});
  CHECK(plan.workers[0].local_id == 0);
  CHECK(plan.workers[1].local_id == 1);
  CHECK(plan.workers[2].local_id == 2);
  CHECK(plan.world_size == 3);
  CHECK(plan.local_world_size == 3);
  CHECK(plan.master_addr == "127.0.0.1");
  CHECK(plan.master_port == 0);
  CHECK(plan.run_id == "r");
  CHECK(plan.platform == "local");
}

TEST_CASE("ports: free by default, one base, or one per worker", "[launcher][plan]") {
  Options o = workers(3);
  CHECK(listens(plan_layout(o, "r")) ==
        Strings{"tcp://127.0.0.1:0", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"});
  o.ports = {6000};
  CHECK(listens(plan_layout(o, "r")) ==
        Strings{"tcp://127.0.0.1:6000", "tcp://127.0.0.1:6001", "tcp://127.0.0.1:6002"});
  o.ports = {7002, 7000, 7001};
  o.address = "10.1.2.3";
  CHECK(listens(plan_layout(o, "r")) ==
        Strings{"tcp://10.1.2.3:7002", "tcp://10.1.2.3:7000", "tcp://10.1.2.3:7001"});
}

TEST_CASE("world size: a launcher's ranks start at its first node id", "[launcher][plan]") {
  Options o = workers(4);
  o.world_size = 8;
  o.node_ids = {4};
  o.attach_to = {"tcp://10.0.0.7:5000"};
  const Plan plan = plan_layout(o, "r");
  CHECK(plan.world_size == 8);
  CHECK(plan.local_world_size == 4);
  CHECK(ranks(plan) == Ints{4, 5, 6, 7});
  CHECK(node_ids(plan) == Ints{4, 5, 6, 7});
  // Rank 0 lives with another launcher: the first --attach-to host is the master.
  CHECK(plan.master_addr == "10.0.0.7");

  o.node_ids = {6};
  try {
    plan_layout(o, "r");
    FAIL("expected a ditask::Error");
  } catch (const ditask::Error& e) {
    CHECK(std::string(e.what()) == "node ids from 6 do not fit --world-size 8");
    CHECK_THAT(e.hint(), Contains("--node-ids"));
  }

  o.node_ids = {0};
  const Plan first = plan_layout(o, "r");
  CHECK(ranks(first) == Ints{0, 1, 2, 3});
  CHECK(first.master_addr == "127.0.0.1");
}

TEST_CASE("dial lists: mesh, star, alone, plus --attach-to for every worker", "[launcher][plan]") {
  Options o = workers(3);
  o.ports = {6000};
  const std::string a = "tcp://127.0.0.1:6000";
  const std::string b = "tcp://127.0.0.1:6001";
  SECTION("mesh: each worker dials the ones before it") {
    const Plan plan = wired(o);
    CHECK(plan.workers[0].attach_to.empty());
    CHECK(plan.workers[1].attach_to == Strings{a});
    CHECK(plan.workers[2].attach_to == Strings{a, b});
  }
  SECTION("star: every worker dials the first") {
    o.topology = "star";
    const Plan plan = wired(o);
    CHECK(plan.workers[0].attach_to.empty());
    CHECK(plan.workers[1].attach_to == Strings{a});
    CHECK(plan.workers[2].attach_to == Strings{a});
  }
  SECTION("alone: nobody dials") {
    o.topology = "alone";
    for (const auto& w : wired(o).workers) {
      CHECK(w.attach_to.empty());
    }
  }
  SECTION("--attach-to is appended to every worker's list") {
    const std::string far = "tcp://10.0.0.9:7000";
    o.attach_to = {far};
    SECTION("mesh") {
      const Plan plan = wired(o);
      CHECK(plan.workers[0].attach_to == Strings{far});
      CHECK(plan.workers[1].attach_to == Strings{a, far});
      CHECK(plan.workers[2].attach_to == Strings{a, b, far});
      CHECK(plan.workers[2].env.at("DITASK_ATTACH_TO") == a + "," + b + "," + far);
    }
    SECTION("alone") {
      o.topology = "alone";
      for (const auto& w : wired(o).workers) {
        CHECK(w.attach_to == Strings{far});
      }
    }
  }
  SECTION("wiring twice gives the same lists") {
    Plan plan = wired(o);
    plan_wiring(plan, o);
    CHECK(plan.workers[2].attach_to == Strings{a, b});
  }
}

TEST_CASE("the contract environment of each worker", "[launcher][plan]") {
  Options o = workers(2);
  o.node_ids = {7};
  o.labels = {"learner", "gpu"};
  o.topology = "star";
  o.main = "entry";
  o.log_level = "info";
  o.ports = {6100};
  Plan plan = plan_layout(o, "20260101T000000-abcdef");
  plan.master_port = 29500;
  plan_wiring(plan, o);

  const auto& env = plan.workers[1].env;
  CHECK(env.at("DITASK_NODE_ID") == "8");
  CHECK(env.at("DITASK_LOCAL_ID") == "1");
  CHECK(env.at("DITASK_PARALLEL_WORKERS") == "2");
  CHECK(env.at("DITASK_WORLD_SIZE") == "2");
  CHECK(env.at("DITASK_LISTEN") == "tcp://127.0.0.1:6101");
  CHECK(env.at("DITASK_ATTACH_TO") == "tcp://127.0.0.1:6100");
  CHECK(env.at("DITASK_TOPOLOGY") == "star");
  CHECK(env.at("DITASK_LABELS") == "learner,gpu");
  CHECK(env.at("DITASK_RUN_ID") == "20260101T000000-abcdef");
  CHECK(env.at("DITASK_PACKAGE") == "./libfoo.so");
  CHECK(env.at("DITASK_MAIN") == "entry");
  CHECK(env.at("DITASK_LOG_LEVEL") == "info");
  CHECK(env.at("RANK") == "1");
  CHECK(env.at("LOCAL_RANK") == "1");
  CHECK(env.at("WORLD_SIZE") == "2");
  CHECK(env.at("LOCAL_WORLD_SIZE") == "2");
  CHECK(env.at("MASTER_ADDR") == "127.0.0.1");
  CHECK(env.at("MASTER_PORT") == "29500");
  CHECK(env.count("DITASK_ATTEMPT") == 0);  // set per spawn

  const auto plan_json = nlohmann::json::parse(env.at("DITASK_PLAN"));
  CHECK(plan_json.at("version") == 1);
  CHECK(plan_json.at("run_id") == "20260101T000000-abcdef");
  CHECK(plan_json.at("protocol") == "tcp");
  CHECK(plan_json.at("platform") == "local");

  CHECK(plan.workers[0].env.at("DITASK_NODE_ID") == "7");
  CHECK(plan.workers[0].env.at("DITASK_ATTACH_TO").empty());
  CHECK(plan.workers[0].env.at("RANK") == "0");

  SECTION("no MASTER_PORT before one is reserved") {
    Plan fresh = wired(o);
    CHECK(fresh.workers[0].env.count("MASTER_PORT") == 0);
  }
}

TEST_CASE("ipc listen addresses live in a per-run folder", "[launcher][plan]") {
  Options o = workers(2);
  o.protocol = "ipc";
  o.node_ids = {3};
  const Plan plan = wired(o, "RUNX");
  const auto dir = std::filesystem::temp_directory_path() / "ditask-RUNX";
  CHECK(plan.workers[0].listen == "ipc://" + (dir / "node_3.sock").string());
  CHECK(plan.workers[1].listen == "ipc://" + (dir / "node_4.sock").string());
  CHECK(plan.workers[1].attach_to == Strings{plan.workers[0].listen});
  CHECK(plan.master_addr == "127.0.0.1");
}

TEST_CASE("worker_environment drops stale DITASK_ variables and overlays the contract",
          "[launcher][plan]") {
  const std::map<std::string, std::string> inherited = {
      {"PATH", "/usr/bin"},
      {"HOME", "/root"},
      {"ASAN_OPTIONS", "detect_leaks=1"},
      {"DITASK_NODE_ID", "99"},
      {"DITASK_ATTEMPT", "5"},
      {"DITASK_SOMETHING_OLD", "x"},
      {"DITASK_LAUNCH_PARALLEL_WORKERS", "8"},
      {"RANK", "42"},
      {"MY_DITASK_SETTING", "kept"},
  };
  const std::map<std::string, std::string> contract = {{"DITASK_NODE_ID", "1"}, {"RANK", "0"}};
  const auto env = ditask::launcher::worker_environment(inherited, contract);
  CHECK(env.at("PATH") == "/usr/bin");
  CHECK(env.at("HOME") == "/root");
  CHECK(env.at("ASAN_OPTIONS") == "detect_leaks=1");
  CHECK(env.at("MY_DITASK_SETTING") == "kept");
  CHECK(env.at("DITASK_NODE_ID") == "1");
  CHECK(env.at("RANK") == "0");
  CHECK(env.count("DITASK_ATTEMPT") == 0);
  CHECK(env.count("DITASK_SOMETHING_OLD") == 0);
  CHECK(env.count("DITASK_LAUNCH_PARALLEL_WORKERS") == 0);
  CHECK(env.size() == 6);
}

TEST_CASE("plan_to_json shows workers, environment and option sources", "[launcher][plan]") {
  Options o = ditask::launcher::resolve_options(
      {{"package", "greeting"}, {"parallel-workers", "2"}, {"labels", "a"}},
      {{"DITASK_LAUNCH_TOPOLOGY", "star"}});
  o.module_args = {"--lr", "0.1"};
  const Plan plan = wired(o, "RUNJ");
  const nlohmann::json j = ditask::launcher::plan_to_json(plan, o);

  CHECK(j.at("run_id") == "RUNJ");
  CHECK(j.at("platform") == "local");
  CHECK(j.at("package") == "greeting");
  CHECK(j.at("main") == "main");
  CHECK(j.at("args") == nlohmann::json::array({"--lr", "0.1"}));
  CHECK(j.at("topology") == "star");
  CHECK(j.at("protocol") == "tcp");
  CHECK(j.at("world_size") == 2);
  CHECK(j.at("local_world_size") == 2);
  CHECK(j.at("master_addr") == "127.0.0.1");
  CHECK_THAT(j.at("listen_note").get<std::string>(), Contains("port 0"));

  const auto& ws = j.at("workers");
  REQUIRE(ws.is_array());
  REQUIRE(ws.size() == 2);
  CHECK(ws[1].at("node_id") == 1);
  CHECK(ws[1].at("local_id") == 1);
  CHECK(ws[1].at("rank") == 1);
  CHECK(ws[1].at("listen") == "tcp://127.0.0.1:0");
  CHECK(ws[1].at("attach_to") == nlohmann::json::array({"tcp://127.0.0.1:0"}));
  CHECK(ws[1].at("labels") == nlohmann::json::array({"a"}));
  CHECK(ws[1].at("env").at("DITASK_NODE_ID") == "1");

  const auto& sources = j.at("options");
  CHECK(sources.at("parallel-workers") ==
        nlohmann::json{{"source", "command line"}, {"value", "2"}});
  CHECK(sources.at("topology") == nlohmann::json{{"source", "environment"}, {"value", "star"}});
  CHECK(sources.at("address") == nlohmann::json{{"source", "default"}, {"value", "127.0.0.1"}});
  CHECK(sources.size() == ditask::launcher::option_specs().size());

  Options fixed = o;
  fixed.ports = {6000};
  CHECK(ditask::launcher::plan_to_json(wired(fixed), fixed).at("listen_note") ==
        "addresses are fixed");
}

TEST_CASE("run ids are a UTC time stamp and random hex", "[launcher][plan]") {
  const std::string a = ditask::launcher::make_run_id();
  const std::string b = ditask::launcher::make_run_id();
  const std::regex shape("[0-9]{8}T[0-9]{6}-[0-9a-f]{6}");
  CHECK(std::regex_match(a, shape));
  CHECK(std::regex_match(b, shape));
  CHECK(a != b);
  CHECK_THAT(a, StartsWith("20"));
}

TEST_CASE("DITASK_PLAN carries the run id, topology, nodes and mesh settings",
          "[launcher][plan][mesh]") {
  Options o = workers(2);
  o.node_ids = {4};
  o.ports = {6200};
  o.topology = "star";
  o.relay = true;
  o.run_id_explicit = true;
  o.startup_timeout = 12.5;
  o.max_frame_bytes = 1 << 20;
  o.send_queue_bytes = 1 << 17;
  o.send_timeout = 3.0;
  o.send_policy = "drop";
  const Plan plan = wired(o, "job-7");
  const std::string text = plan.workers[0].env.at("DITASK_PLAN");
  CHECK(plan.workers[1].env.at("DITASK_PLAN") == text);  // one plan shared by every worker
  const auto j = nlohmann::json::parse(text);
  CHECK(j.at("version") == 1);
  CHECK(j.at("run_id") == "job-7");
  CHECK(j.at("run_id_explicit") == true);
  CHECK(j.at("platform") == "local");
  CHECK(j.at("protocol") == "tcp");
  CHECK(j.at("topology") == "star");
  CHECK(j.at("grace_period_s") == 10.0);
  CHECK(j.at("nodes") == nlohmann::json::parse(R"([
    {"node_id": 4, "local_id": 0, "listen": "tcp://127.0.0.1:6200"},
    {"node_id": 5, "local_id": 1, "listen": "tcp://127.0.0.1:6201"}])"));
  CHECK(j.at("mesh") == nlohmann::json::parse(R"({
    "startup_timeout_s": 12.5, "max_frame_bytes": 1048576, "send_queue_bytes": 131072,
    "send_timeout_s": 3.0, "send_policy": "drop", "relay": true})"));

  SECTION("the token key only when a token is set") {
    o.token = "0123456789abcdef-secret";
    const auto with = nlohmann::json::parse(wired(o).workers[0].env.at("DITASK_PLAN"));
    CHECK(with.at("mesh").at("token") == "0123456789abcdef-secret");
  }
  SECTION("defaults") {
    const auto d = nlohmann::json::parse(wired(workers(1)).workers[0].env.at("DITASK_PLAN"));
    CHECK(d.at("run_id_explicit") == false);
    CHECK(d.at("topology") == "mesh");
    CHECK(d.at("mesh") == nlohmann::json::parse(R"({
      "startup_timeout_s": 60.0, "max_frame_bytes": 268435456, "send_queue_bytes": 8388608,
      "send_timeout_s": 30.0, "send_policy": "wait", "relay": false})"));
  }
}

TEST_CASE("DITASK_PLAN nodes carry the ports bind_all bound", "[launcher][plan][mesh]") {
  // launch() binds first and wires after: the plan's free ports (port 0) are real by then.
  const Options o = workers(2);
  Plan plan = plan_layout(o, "r");
  ditask::launcher::ListenSockets sockets = ditask::launcher::ListenSockets::bind_all(plan);
  plan_wiring(plan, o);
  const auto nodes = nlohmann::json::parse(plan.workers[1].env.at("DITASK_PLAN")).at("nodes");
  REQUIRE(nodes.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(nodes[i].at("listen") == plan.workers[i].listen);
    CHECK(nodes[i].at("listen") != "tcp://127.0.0.1:0");
  }
}

TEST_CASE("the run id of a launch: the options' own, else a fresh one", "[launcher][plan][mesh]") {
  using ditask::launcher::run_id_for;
  Options o = workers(1);
  CHECK(std::regex_match(run_id_for(o), std::regex("[0-9]{8}T[0-9]{6}-[0-9a-f]{6}")));
  o.run_id = "given";
  CHECK(run_id_for(o) == "given");
  const Options resolved =
      ditask::launcher::resolve_options({{"package", "x"}}, {{"DITASK_RUN_ID", "inherited-1"}});
  const auto j =
      nlohmann::json::parse(wired(resolved, run_id_for(resolved)).workers[0].env.at("DITASK_PLAN"));
  CHECK(j.at("run_id") == "inherited-1");
  CHECK(j.at("run_id_explicit") == true);
}

TEST_CASE("plan_to_json never shows the token", "[launcher][plan][mesh]") {
  const std::string secret = "do-not-print-0123456789";
  Options o = ditask::launcher::resolve_options(
      {{"package", "greeting"}, {"parallel-workers", "2"}, {"send-policy", "drop"}},
      {{"DITASK_TOKEN", secret}});
  const Plan plan = wired(o, "RUNT");
  REQUIRE_THAT(plan.workers[0].env.at("DITASK_PLAN"), Contains(secret));  // the workers need it
  const nlohmann::json j = ditask::launcher::plan_to_json(plan, o);
  CHECK_THAT(j.dump(), !Contains(secret));
  CHECK(j.at("mesh").at("token") == "<hidden>");
  CHECK(j.at("mesh").at("send_policy") == "drop");
  CHECK(j.at("run_id_explicit") == false);
  CHECK(j.at("options").at("token") ==
        nlohmann::json{{"source", "environment"}, {"value", "<hidden>"}});
  const auto shown =
      nlohmann::json::parse(j.at("workers")[1].at("env").at("DITASK_PLAN").get<std::string>());
  CHECK(shown.at("mesh").at("token") == "<hidden>");
  CHECK(shown.at("nodes").size() == 2);

  SECTION("no token: no token key, and an empty option value") {
    Options none = ditask::launcher::resolve_options({{"package", "greeting"}}, {});
    const nlohmann::json n = ditask::launcher::plan_to_json(wired(none), none);
    CHECK_FALSE(n.at("mesh").contains("token"));
    CHECK(n.at("options").at("token").at("value") == "");
  }
}
