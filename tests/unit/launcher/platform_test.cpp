// SPDX-License-Identifier: MIT
// --platform slurm|k8s: what the option resolution takes from a platform's environment and from
// --platform-spec, against DI-engine's parser tests (diengine.md §5) and where it goes wrong.
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ditask/error.hpp"
#include "ditask/launcher/options.hpp"
#include "error_of.hpp"

using ditask::launcher::Options;
using ditask::launcher::resolve_options;
using ditask::launcher::Source;
using ditask::test::error_of;
using Env = std::map<std::string, std::string>;
using Strings = std::vector<std::string>;

namespace {

Options slurm(Env env, ditask::launcher::RawValues cli) {
  cli["package"] = "x";
  cli["platform"] = "slurm";
  return resolve_options(cli, env);
}

Env di_engine_slurm(int procid, int localid) {
  return {{"SLURM_NTASKS", "6"}, {"SLURM_TASKS_PER_NODE", "3(x2)"}, {"SLURM_NODELIST", "SH-IDC1-10-5-38-[190,215]"},
          {"SLURM_PROCID", std::to_string(procid)}, {"SLURM_LOCALID", std::to_string(localid)},
          {"SLURMD_NODENAME", procid < 3 ? "SH-IDC1-10-5-38-190" : "SH-IDC1-10-5-38-215"}};
}

}  // namespace

TEST_CASE("slurm: DI-engine's expected values, without and with a platform spec", "[launcher][platform]") {
  const auto o = slurm(di_engine_slurm(3, 0), {});
  CHECK(o.address == "SH-IDC1-10-5-38-215");
  CHECK(o.ports == std::vector<std::int64_t>{15151});
  CHECK(o.node_ids == std::vector<std::int64_t>{3});
  CHECK(o.attach_to == Strings{"tcp://SH-IDC1-10-5-38-190:15151", "tcp://SH-IDC1-10-5-38-190:15152",
                               "tcp://SH-IDC1-10-5-38-190:15153"});
  CHECK(o.world_size == 6);
  CHECK(o.origins.at("node-ids") == Source::platform);
  CHECK(o.origins.at("attach-to") == Source::platform);
  CHECK(o.platform == "slurm");
  CHECK(o.platform_info["read"] == "job");  // no step variables: the job-level ones
  CHECK(o.platform_info["variables"]["SLURM_NODELIST"] == "SH-IDC1-10-5-38-[190,215]");

  // A spec task with its own node id; $node.N names another task's first address.
  const std::string spec = R"({"tasks": [{"node_ids": 10}, {"node_ids": 11}, {"node_ids": 20}, {"node_ids": 31,
      "attach_to": "$node.10,$node.20,tcp://elsewhere:9", "labels": "learner"}, {}, {}]})";
  const auto s = slurm(di_engine_slurm(3, 0), {{"platform-spec", spec}});
  CHECK(s.node_ids == std::vector<std::int64_t>{31});
  CHECK(s.attach_to == Strings{"tcp://SH-IDC1-10-5-38-190:15151", "tcp://SH-IDC1-10-5-38-190:15153",
                               "tcp://elsewhere:9"});
  CHECK(s.labels == Strings{"learner"});
  CHECK(s.origins.at("node-ids") == Source::platform_spec);
  CHECK(s.origins.at("address") == Source::platform);
}

TEST_CASE("slurm: node[1-2], 2 tasks per node, with 1 and 2 parallel workers", "[launcher][platform]") {
  const Env env{{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}, {"SLURM_STEP_NODELIST", "node[1-2]"},
                {"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "1"}, {"SLURMD_NODENAME", "node2"}, {"SLURM_NODEID", "1"},
                {"SLURM_JOB_ID", "4711"}, {"SLURM_STEP_ID", "0"}};
  const auto one = slurm(env, {});
  CHECK(one.ports == std::vector<std::int64_t>{15152});
  CHECK(one.attach_to == Strings{"tcp://node1:15151", "tcp://node1:15152", "tcp://node2:15151"});
  CHECK(one.run_id == "slurm-4711.0");
  CHECK(one.run_id_explicit);
  CHECK(one.platform_info["read"] == "step");
  const auto two = slurm(env, {{"parallel-workers", "2"}});
  CHECK(two.node_ids == std::vector<std::int64_t>{6});
  CHECK(two.ports == std::vector<std::int64_t>{15153});  // 15151 + local slot 1 x 2 workers
  CHECK(two.attach_to.size() == 6);
  CHECK(two.attach_to.back() == "tcp://node2:15152");
  CHECK(two.world_size == 8);  // workers, not nodes
  // The command line wins over the platform, and the formula follows its ports.
  const auto cli = slurm(env, {{"ports", "30000"}, {"address", "10.0.0.2"}});
  CHECK(cli.address == "10.0.0.2");
  CHECK(cli.ports == std::vector<std::int64_t>{30001});
  CHECK(cli.origins.at("address") == Source::command_line);
}

TEST_CASE("slurm: uneven 2(x3),1 and cyclic placement give the ports Slurm's placement implies",
          "[launcher][platform]") {
  Env uneven{{"SLURM_STEP_NUM_TASKS", "7"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_STEP_NODELIST", "n[01-04]"},
             {"SLURM_PROCID", "6"}, {"SLURM_LOCALID", "0"}, {"SLURMD_NODENAME", "n04"}};
  const auto u = slurm(uneven, {{"topology", "star"}});
  CHECK(u.address == "n04");
  CHECK(u.ports == std::vector<std::int64_t>{15151});
  CHECK(u.attach_to == Strings{"tcp://n01:15151"});  // star: the workers of rank 0
  Env cyclic{{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}, {"SLURM_STEP_NODELIST", "a,b"},
             {"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "1"}, {"SLURMD_NODENAME", "b"}, {"SLURM_DISTRIBUTION", "cyclic"}};
  const auto c = slurm(cyclic, {});
  CHECK(c.address == "b");
  CHECK(c.ports == std::vector<std::int64_t>{15152});
  // Ranks 0, 1, 2 are on a, b, a: a's slots 0 and 1, b's slot 0.
  CHECK(c.attach_to == Strings{"tcp://a:15151", "tcp://b:15151", "tcp://a:15152"});
  Env alone = cyclic;
  CHECK(slurm(alone, {{"topology", "alone"}}).attach_to.empty());
}

TEST_CASE("slurm: bad or inconsistent variables are errors naming them", "[launcher][platform]") {
  const Env good{{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}, {"SLURM_STEP_NODELIST", "node[1-2]"},
                 {"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "1"}, {"SLURMD_NODENAME", "node2"}};
  const auto what = [&](Env env) { return std::string(error_of([&] { slurm(env, {}); }).what()); };
  auto e = good;
  e["SLURM_DISTRIBUTION"] = "plane=2";
  CHECK_THAT(what(e), Catch::Contains("SLURM_DISTRIBUTION=plane=2 places tasks in a way the host list cannot tell"));
  CHECK_THAT(error_of([&] { slurm(e, {}); }).hint(), Catch::Contains("--rendezvous"));
  e = good;
  e["SLURM_LOCALID"] = "0";
  CHECK(what(e) == "--platform slurm: block placement puts task 3 on node2 (local id 1), but SLURMD_NODENAME=node2 "
                   "SLURM_LOCALID=0");
  e = good;
  e["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)";
  CHECK(what(e) == "--platform slurm: 2 hosts in 'node[1-2]' but 3 task counts in '2(x3)'");
  e = good;
  e["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  CHECK(what(e) == "--platform slurm: the tasks per node '1(x2)' add up to 2, not the 4 tasks of the step");
  e = good;
  e["SLURM_STEP_NODELIST"] = "node[1-2";
  CHECK_THAT(what(e), Catch::StartsWith("malformed Slurm host list 'node[1-2'"));
  e = good;
  e["SLURM_PROCID"] = "x";
  CHECK(what(e) == "--platform slurm: SLURM_PROCID='x' is not an integer of at least 0");
  e = good;
  e["SLURM_PROCID"] = "4";
  CHECK(what(e) == "--platform slurm: SLURM_PROCID=4 is not below the task count 4");
  e = good;
  e.erase("SLURM_STEP_NUM_TASKS");
  CHECK(what(e) == "--platform slurm: SLURM_STEP_NUM_TASKS is not set");
  // Without SLURM_NTASKS_PER_NODE (only set with --ntasks-per-node): not needed.
  CHECK(slurm(good, {}).node_ids == std::vector<std::int64_t>{3});
}

TEST_CASE("slurm: with a rendezvous, any placement, free ports, no attach list from a formula", "[launcher][platform]") {
  Env env{{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_STEP_NODELIST", "node[1-2]"}, {"SLURM_PROCID", "2"},
          {"SLURM_LOCALID", "0"}, {"SLURMD_NODENAME", "node1"}, {"SLURM_DISTRIBUTION", "arbitrary"},
          {"SLURM_JOB_ID", "12345"}};
  const auto o = slurm(env, {{"rendezvous", "auto"}});
  CHECK(o.rendezvous == "tcp://node1:" + std::to_string(20000 + 12345 % 12000));
  CHECK(o.address == "node1");
  CHECK(o.ports.empty());
  CHECK(o.attach_to.empty());
  CHECK(o.node_ids == std::vector<std::int64_t>{2});
  CHECK(o.platform_info["placement"] == "rendezvous");
}

TEST_CASE("k8s: DI-orchestrator's DI_NODES and DI_RANK, as DI-engine's parser test expects", "[launcher][platform]") {
  const Env env{{"DI_NODES", "SH-0,SH-1,SH-2,SH-3,SH-4,SH-5"}, {"DI_RANK", "3"}, {"DI_JOB_ID", "default/dqn"},
                {"DI_LEARNER_NODES", "SH-0"}};
  auto k8s = [&](ditask::launcher::RawValues cli) {
    cli["package"] = "x";
    cli["platform"] = "k8s";
    return resolve_options(cli, env);
  };
  const auto o = k8s({});
  CHECK(o.address == "SH-3");
  CHECK(o.ports == std::vector<std::int64_t>{50515});
  CHECK(o.node_ids == std::vector<std::int64_t>{3});
  CHECK(o.attach_to == Strings{"tcp://SH-0:50515", "tcp://SH-1:50515", "tcp://SH-2:50515"});
  CHECK(o.run_id == "k8s-default.dqn");
  CHECK(o.platform_info["variables"]["DI_LEARNER_NODES"] == "SH-0");
  const std::string spec = R"({"tasks": [{"node_ids": 10}, {"node_ids": 11}, {"node_ids": 20},
      {"node_ids": 31, "ports": 50000, "attach_to": "$node.10,$node.11,$node.20"}]})";
  const auto s = k8s({{"platform-spec", spec}});
  CHECK(s.node_ids == std::vector<std::int64_t>{31});
  CHECK(s.ports == std::vector<std::int64_t>{50000});
  CHECK(s.attach_to == Strings{"tcp://SH-0:50515", "tcp://SH-1:50515", "tcp://SH-2:50515"});
  const auto two = k8s({{"parallel-workers", "2"}});
  CHECK(two.node_ids == std::vector<std::int64_t>{6});
  CHECK(two.attach_to == Strings{"tcp://SH-0:50515", "tcp://SH-0:50516", "tcp://SH-1:50515", "tcp://SH-1:50516",
                                 "tcp://SH-2:50515", "tcp://SH-2:50516"});
  CHECK(two.world_size == 12);
}

TEST_CASE("k8s: a re-created pod's rank outside DI_NODES is a clear error, not a crash", "[launcher][platform]") {
  const auto e = error_of([] {
    resolve_options({{"package", "x"}, {"platform", "k8s"}}, {{"DI_NODES", "a,b,c,d"}, {"DI_RANK", "4"}});
  });
  CHECK(std::string(e.what()) == "--platform k8s: DI_RANK=4 is outside DI_NODES, which lists 4 pods");
  CHECK_THAT(e.hint(), Catch::Contains("re-created"));
}

TEST_CASE("k8s: an Indexed Job's JOB_COMPLETION_INDEX with --world-size and --host-pattern", "[launcher][platform]") {
  const Env env{{"JOB_COMPLETION_INDEX", "2"}};
  const auto o = resolve_options({{"package", "x"}, {"platform", "k8s"}, {"parallel-workers", "2"}, {"world-size", "6"},
                                  {"host-pattern", "job-{index}.svc"}},
                                 env);
  CHECK(o.address == "job-2.svc");
  CHECK(o.node_ids == std::vector<std::int64_t>{4});
  CHECK(o.attach_to == Strings{"tcp://job-0.svc:50515", "tcp://job-0.svc:50516", "tcp://job-1.svc:50515",
                               "tcp://job-1.svc:50516"});
  CHECK(o.platform_info["read"] == "indexed job");
  const auto missing = error_of([&] {
    resolve_options({{"package", "x"}, {"platform", "k8s"}, {"world-size", "3"}}, env);
  });
  CHECK_THAT(missing.what(), Catch::Contains("needs --host-pattern with {index}"));
  const auto no_size = error_of([&] { resolve_options({{"package", "x"}, {"platform", "k8s"}}, env); });
  CHECK_THAT(no_size.what(), Catch::Contains("needs --world-size"));
}

TEST_CASE("platform spec: an unknown key or $node.N is an error naming it", "[launcher][platform]") {
  const Env env{{"DI_NODES", "a,b"}, {"DI_RANK", "1"}};
  auto with_spec = [&](const std::string& spec) {
    return error_of([&] { resolve_options({{"package", "x"}, {"platform", "k8s"}, {"platform-spec", spec}}, env); });
  };
  const auto unknown = with_spec(R"({"tasks": [{}, {"node_idz": 3}]})");
  CHECK(std::string(unknown.what()) == "--platform-spec: tasks[1] has the unknown key 'node_idz'");
  CHECK(unknown.hint() == "did you mean 'node-ids'?");
  CHECK(std::string(with_spec(R"({"tasks": [{}, {"attach_to": "$node.7"}]})").what()) ==
        "--platform-spec: '$node.7' names no task's first node id");
}

TEST_CASE("rendezvous: bad values and missing sizes exit 2", "[launcher][platform]") {
  CHECK_THAT(error_of([] { resolve_options({{"package", "x"}, {"rendezvous", "nfs:/x"}}, {}); }).what(),
             Catch::StartsWith("--rendezvous 'nfs:/x' is not file:///dir, tcp://host:port or auto"));
  CHECK_THAT(error_of([] { resolve_options({{"package", "x"}, {"rendezvous", "tcp://h:0"}}, {}); }).what(),
             Catch::StartsWith("--rendezvous 'tcp://h:0' is not"));
  CHECK_THAT(error_of([] { resolve_options({{"package", "x"}, {"rendezvous", "file:///tmp/r"}}, {}); }).what(),
             Catch::StartsWith("--rendezvous without --platform needs --world-size"));
  const auto one_launcher = error_of([] {
    resolve_options({{"package", "x"}, {"rendezvous", "file:///tmp/r"}, {"world-size", "2"}, {"parallel-workers", "2"}},
                    {});
  });
  CHECK(std::string(one_launcher.what()) ==
        "--rendezvous: --world-size 2 leaves no other launcher to meet (--parallel-workers 2)");
  CHECK(one_launcher.hint() == "--world-size is the job's worker count over all its launchers");
  const auto not_multiple = error_of([] {
    resolve_options({{"package", "x"}, {"rendezvous", "file:///tmp/r"}, {"world-size", "3"}, {"parallel-workers", "2"}},
                    {});
  });
  CHECK(std::string(not_multiple.what()) == "--rendezvous: --world-size 3 is not a multiple of --parallel-workers 2");
  CHECK(not_multiple.hint() == "every launcher of a rendezvous runs --parallel-workers workers; it waits for world "
                               "size / parallel workers launchers");
  CHECK_THAT(error_of([] { resolve_options({{"package", "x"}, {"rendezvous", "auto"}, {"world-size", "2"}}, {}); }).what(),
             Catch::StartsWith("--rendezvous auto needs --platform slurm or k8s"));
  // A launcher's rank is its first node id / --parallel-workers: the ids must start a rank's block.
  const auto misaligned = error_of([] {
    resolve_options({{"package", "x"}, {"rendezvous", "tcp://127.0.0.1:29482"}, {"world-size", "4"},
                     {"parallel-workers", "2"}, {"node-ids", "1"}},
                    {});
  });
  CHECK_THAT(misaligned.what(),
             Catch::Equals("--rendezvous: --node-ids starts at 1, not at a multiple of --parallel-workers 2"));
  CHECK_THAT(misaligned.hint(), Catch::Equals("launcher r of the rendezvous runs node ids r*2 .. r*2+1: give "
                                              "--node-ids 0 or 2"));
  CHECK_NOTHROW(resolve_options({{"package", "x"}, {"rendezvous", "tcp://127.0.0.1:29482"}, {"world-size", "4"},
                                 {"parallel-workers", "2"}, {"node-ids", "2"}, {"run-id", "job-1"}},
                                {}));
}

TEST_CASE("rendezvous: every launcher of the job needs the same run id", "[launcher][platform]") {
  const auto e = error_of([] {
    resolve_options({{"package", "x"}, {"rendezvous", "tcp://h:7"}, {"world-size", "4"}, {"parallel-workers", "2"}}, {});
  });
  CHECK(std::string(e.what()) == "--rendezvous needs one run id for every launcher of the job");
  const auto o = resolve_options({{"package", "x"}, {"rendezvous", "tcp://h:7"}, {"world-size", "4"},
                                  {"parallel-workers", "2"}, {"run-id", "job-1"}},
                                 {});
  CHECK(o.serves_rendezvous);  // node ids from 0: rank 0 serves
  const auto other = resolve_options({{"package", "x"}, {"rendezvous", "tcp://h:7"}, {"world-size", "4"},
                                      {"parallel-workers", "2"}, {"node-ids", "2"}},
                                     {{"DITASK_RUN_ID", "job-1"}});
  CHECK_FALSE(other.serves_rendezvous);
}
