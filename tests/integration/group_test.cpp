// SPDX-License-Identifier: MIT
// Groups of nodes by role and their collectives between real workers (plugins/rpc_tests
// groups.cpp): three groups in one job, 1,000 barriers in a row, a member dying mid-barrier.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace ditask::test;
using namespace ditask::test::mesh;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> group_args(const std::string& entry, int workers, std::vector<std::string> more) {
  return module_args("rpc_tests", entry, workers, std::move(more));
}

}  // namespace

TEST_CASE("groups: three groups in one job each run a barrier, a broadcast and all-reduces of their own",
          "[groups][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(group_args("groups_three", 6, {"--roles", "trainer:0-2,server:3-4,lock:5"})), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const std::string trainer = " members=0,1,2 bcast=from node 2 sum=3,3 max=2 other=not_member|-1";
  CHECK(result_of(r.out, 0) == "group=trainer index=0" + trainer);
  CHECK(result_of(r.out, 1) == "group=trainer index=1" + trainer);
  CHECK(result_of(r.out, 2) == "group=trainer index=2" + trainer);
  CHECK(result_of(r.out, 3) == "group=server index=0 members=3,4 bcast=from node 4 sum=7,2 max=4 other=not_member|-1");
  CHECK(result_of(r.out, 4) == "group=server index=1 members=3,4 bcast=from node 4 sum=7,2 max=4 other=not_member|-1");
  CHECK(result_of(r.out, 5) == "group=lock index=0 members=5 bcast=from node 5 sum=5,1 max=5 other=not_member|-1");
}

TEST_CASE("groups: 1,000 barriers in a row, then a sum, on every member", "[groups][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(group_args("groups_many", 3, {"--roles", "trainer:0-2", "--", "rounds=1000"})), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  for (int node = 0; node < 3; ++node) {
    CHECK(result_of(r.out, node) == "rounds=1000 sum=3");
  }
}

TEST_CASE("groups: members that see different members (--topology star) all fail with mismatch at once",
          "[groups][integration]") {
  auto r = run_ditask(group_args("groups_star", 3, {"--topology", "star"}), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "members=0,1,2 barrier=mismatch|-1");
  CHECK(result_of(r.out, 1) == "members=0,1 barrier=mismatch|-1");
  CHECK(result_of(r.out, 2) == "members=0,2 barrier=mismatch|-1");
}

TEST_CASE("groups: a member that dies mid-barrier fails it on every other member, naming the member, "
          "the group formed anew with its restart works",
          "[groups][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  // Node 2 is a plain member; node 0 is also the coordinator.
  for (int victim : {2, 0}) {
    auto r = run_ditask(over.args(group_args("groups_member_dies", 3,
                                   {"--roles", "trainer:0-2", "--auto-recover", "--restart-backoff", "0", "--",
                                    "victim=" + std::to_string(victim)})),
                        120s);
    INFO("victim " << victim << "\n" << describe(r));
    REQUIRE(r.exit_code == 0);
    for (int node = 0; node < 3; ++node) {
      if (node != victim) {
        CHECK(result_of(r.out, node) == "error=member_left|" + std::to_string(victim) + " renewed=3");
      }
    }
    CHECK(result_of(r.out, victim) == "renewed=3");  // its restart, in the group formed anew
  }
}

TEST_CASE("groups: --layout biggraph prints the layout, sets the worker count and gives groups that agree",
          "[groups][layout][integration]") {
  auto r = run_ditask({"--package", module_path("rpc_tests"), "--main", "groups_three", "--layout",
                       "biggraph:machines=2,partition_servers=1"},
                      90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Matchers::Contains(
                        "ditask: layout biggraph:machines=2,partition_servers=1: trainer 0-1, parameter_server 2-3, "
                        "parameter_client 4-5, lock_server 6, partition_server 7, world size 8"));
  CHECK(result_of(r.out, 0) == "group=trainer index=0 members=0,1 bcast=from node 1 sum=1,2 max=1 other=not_member|-1");
  CHECK(result_of(r.out, 3) ==
        "group=parameter_server index=1 members=2,3 bcast=from node 3 sum=5,2 max=3 other=not_member|-1");
  CHECK(result_of(r.out, 5) ==
        "group=parameter_client index=1 members=4,5 bcast=from node 5 sum=9,2 max=5 other=not_member|-1");
  CHECK(result_of(r.out, 6) == "group=lock_server index=0 members=6 bcast=from node 6 sum=6,1 max=6 other=not_member|-1");
  CHECK(result_of(r.out, 7) ==
        "group=partition_server index=0 members=7 bcast=from node 7 sum=7,1 max=7 other=not_member|-1");
}

TEST_CASE("biggraph: partition_servers=0 (PBG's partitions through a shared disk) fails naming what is missing",
          "[groups][layout][integration]") {
  auto r = run_ditask({"--package", module_path("biggraph"), "--layout", "biggraph:machines=1,partition_servers=0",
                       "--timeout", "60"},
                      90s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Matchers::Contains(
                        "biggraph: no partition server (partition_servers=0): this example keeps the partitions on "
                        "partition servers; PyTorch-BigGraph's 0, partitions swapped through a shared disk, is not "
                        "implemented"));
}

TEST_CASE("groups: a bad --layout, or one beside --roles or a worker count it does not fit, exits 2 and starts nothing",
          "[groups][layout][bad-input][integration]") {
  struct Case {
    std::vector<std::string> args;
    const char* error;
  };
  const std::vector<Case> cases = {
      {{"--layout", "ring:machines=2"}, "ditask: error: --layout: unknown layout 'ring' (known: biggraph)"},
      {{"--layout", "biggraph:machines=0"}, "ditask: error: --layout biggraph:machines=0: machines must be at least 1"},
      {{"--layout", "biggraph:machines=2", "--parallel-workers", "4"},
       "ditask: error: --layout biggraph:machines=2 lays out 9 workers, but the job has 4 (--parallel-workers)"},
      {{"--layout", "biggraph:machines=1", "--roles", "trainer:0-"},
       "ditask: error: --layout and --roles both give the roles"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--package", module_path("greeting")};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CAPTURE(c.error);
    auto r = run_ditask(args, 20s);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Matchers::Contains(c.error));
    CHECK_THAT(r.err, Catch::Matchers::Contains("ditask: hint: "));
    CHECK(r.out.empty());
    CHECK_THAT(r.err, !Catch::Matchers::Contains("[node "));
  }
}
