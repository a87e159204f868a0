// SPDX-License-Identifier: MIT
// --platform k8s simulated on this machine: three "pods" (launchers) with the environment
// DI-orchestrator or an Indexed Job gives them, their host names mapped to loopback addresses
// 127.0.0.1-3 by a hosts file of the test's own (never the host's DNS). Every node must hear every
// other. Also --dry-run under each platform: the plan and where each value came from.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using namespace ditask::test::mesh;

namespace {

/// Runs 3 launchers of `workers` workers, launcher i with `env_of(i)`, each running the mesh
/// test `ping`; returns their results.
std::vector<RunResult> three_pods(const std::vector<std::string>& launcher_args, int workers,
                                  const std::function<Env(int)>& env_of) {
  std::vector<std::unique_ptr<DitaskProcess>> pods;
  for (int i = 0; i < 3; ++i) {
    pods.push_back(std::make_unique<DitaskProcess>());
    auto args = mesh_args("ping", workers, launcher_args);
    pods.back()->start(args, env_of(i));
  }
  std::vector<RunResult> results;
  for (auto& p : pods) {
    results.push_back(p->wait(60s));
  }
  return results;
}

void check_all_heard(const std::vector<RunResult>& results, int nodes) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    INFO("pod " << i << ":\n" << describe(results[i]));
    CHECK(results[i].exit_code == 0);
  }
  std::string all;
  for (const auto& r : results) {
    all += r.out;
  }
  for (int n = 0; n < nodes; ++n) {
    std::string others;
    for (int m = 0; m < nodes; ++m) {
      others += m == n ? "" : (others.empty() ? "" : ",") + std::to_string(m);
    }
    CHECK(lines_with(all, "[node " + std::to_string(n) + "] RESULT peers=" + others + " pings_from=" + others).size() ==
          1);
  }
}

}  // namespace

TEST_CASE("k8s: three DIJob pods (DI_NODES, DI_RANK) find each other", "[integration][k8s]") {
  TempDir dir;
  const auto hosts = dir.write("hosts", "127.0.0.1 dqn-collector-0.di-dqn.default.svc.cluster.local\n"
                                        "127.0.0.2 dqn-collector-1.di-dqn.default.svc.cluster.local\n"
                                        "127.0.0.3 dqn-learner-0.di-dqn.default.svc.cluster.local\n");
  const std::string nodes = "dqn-collector-0.di-dqn.default.svc.cluster.local,dqn-collector-1.di-dqn.default.svc.cluster.local,"
                            "dqn-learner-0.di-dqn.default.svc.cluster.local";
  const ReservedPorts ports(2, {"127.0.0.1", "127.0.0.2", "127.0.0.3"});  // 2 workers a pod
  const auto port = std::to_string(ports.first);
  const auto results = three_pods({"--platform", "k8s", "--hosts-file", hosts, "--ports", port}, 2, [&](int i) {
    return Env{{"DI_NODES", nodes}, {"DI_RANK", std::to_string(i)}, {"DI_JOB_ID", "default/dqn"}};
  });
  check_all_heard(results, 6);
}

TEST_CASE("k8s: three pods of an Indexed Job (JOB_COMPLETION_INDEX) find each other", "[integration][k8s]") {
  TempDir dir;
  const auto hosts = dir.write("hosts", "127.0.0.1 cp-0.cp\n127.0.0.2 cp-1.cp\n127.0.0.3 cp-2.cp\n");
  const ReservedPorts ports(1, {"127.0.0.1", "127.0.0.2", "127.0.0.3"});
  const auto port = std::to_string(ports.first);
  const auto results =
      three_pods({"--platform", "k8s", "--hosts-file", hosts, "--ports", port, "--world-size", "3", "--host-pattern",
                  "cp-{index}.cp", "--run-id", "cp-job"},
                 1, [&](int i) { return Env{{"JOB_COMPLETION_INDEX", std::to_string(i)}}; });
  check_all_heard(results, 3);
}

TEST_CASE("dry-run: under a platform the plan shows the platform, its variables and each value's source",
          "[integration][k8s][dry-run]") {
  auto slurm = run_ditask({"--package", module_path("greeting"), "--platform", "slurm", "--parallel-workers", "2", "--dry-run"},
                          20s,
                          {{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_STEP_NODELIST", "n[1-2]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
                           {"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "0"}, {"SLURMD_NODENAME", "n2"}, {"SLURM_JOB_ID", "9"},
                           {"SLURM_STEP_ID", "0"}});
  INFO(describe(slurm));
  REQUIRE(slurm.exit_code == 0);
  const auto plan = nlohmann::json::parse(slurm.out);
  CHECK(plan["platform"] == "slurm");
  CHECK(plan["platform_layout"]["rank"] == 1);
  CHECK(plan["platform_layout"]["hosts"] == nlohmann::json::array({"n1", "n2"}));
  CHECK(plan["platform_layout"]["variables"]["SLURM_STEP_NODELIST"] == "n[1-2]");
  CHECK(plan["options"]["node-ids"]["source"] == "platform environment");
  CHECK(plan["options"]["node-ids"]["value"] == "2");
  CHECK(plan["options"]["parallel-workers"]["source"] == "command line");
  CHECK(plan["world_size"] == 4);
  CHECK(plan["master_addr"] == "n1");
  CHECK(plan["run_id"] == "slurm-9.0");
  CHECK(plan["workers"][0]["attach_to"] == nlohmann::json::array({"tcp://n1:15151", "tcp://n1:15152"}));
  CHECK(plan["workers"][1]["listen"] == "tcp://n2:15152");
  auto k8s = run_ditask({"--package", module_path("greeting"), "--platform", "k8s", "--dry-run"}, 20s,
                        {{"DI_NODES", "a,b"}, {"DI_RANK", "0"}});
  INFO(describe(k8s));
  REQUIRE(k8s.exit_code == 0);
  const auto kplan = nlohmann::json::parse(k8s.out);
  CHECK(kplan["platform_layout"]["read"] == "di-orchestrator");
  CHECK(kplan["options"]["address"]["source"] == "platform environment");
  CHECK(kplan["workers"][0]["listen"] == "tcp://a:50515");
}

namespace {

/// The container args of a manifest in scripts/k8s/ (a flow list, valid JSON), as ditask gets
/// them; the package becomes this build's module.
std::vector<std::string> manifest_args(const std::string& name) {
  std::ifstream in(std::string(DITASK_SOURCE_DIR) + "/scripts/k8s/" + name);
  std::stringstream text;
  text << in.rdbuf();
  const std::string yaml = text.str();
  const auto at = yaml.find("args: [");
  REQUIRE(at != std::string::npos);
  const auto end = yaml.find(']', at);
  auto args = nlohmann::json::parse(yaml.substr(at + 6, end - at - 5)).get<std::vector<std::string>>();
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--package") {
      args[i + 1] = module_path(args[i + 1]);
    }
  }
  return args;
}

}  // namespace

TEST_CASE("k8s: the manifests' command lines plan the job a pod of theirs would run", "[integration][k8s][dry-run]") {
  auto dijob = manifest_args("dijob.yaml");
  dijob.push_back("--dry-run");
  auto d = run_ditask(dijob, 20s, {{"DI_NODES", "cartpole-learner-0.di-cartpole,cartpole-collector-0.di-cartpole,"
                                                "cartpole-collector-1.di-cartpole"},
                                   {"DI_RANK", "2"}, {"DI_JOB_ID", "default/cartpole"}, {"DITASK_TOKEN", std::string(32, 't')}});
  INFO(describe(d));
  REQUIRE(d.exit_code == 0);
  const auto dplan = nlohmann::json::parse(d.out);
  CHECK(dplan["workers"][0]["node_id"] == 2);
  CHECK(dplan["workers"][0]["roles"] == nlohmann::json::array({"collector"}));
  CHECK(dplan["workers"][0]["attach_to"].size() == 2);
  auto indexed = manifest_args("indexed-job.yaml");
  indexed.push_back("--dry-run");
  auto j = run_ditask(indexed, 20s, {{"JOB_COMPLETION_INDEX", "0"}, {"DITASK_TOKEN", std::string(32, 't')}});
  INFO(describe(j));
  REQUIRE(j.exit_code == 0);
  const auto jplan = nlohmann::json::parse(j.out);
  CHECK(jplan["workers"][0]["listen"] == "tcp://cartpole-0.cartpole:50515");
  CHECK(jplan["workers"][0]["roles"] == nlohmann::json::array({"learner"}));
  CHECK(jplan["world_size"] == 3);
}
