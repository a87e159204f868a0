// SPDX-License-Identifier: MIT
// Rank layouts: ditask::biggraph_layout against PyTorch-BigGraph's ProcessRanks numbers, and
// --layout's parsing and its checks against --roles and the worker count.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ditask/error.hpp"
#include "ditask/layout.hpp"
#include "layout_option.hpp"

namespace {

using Ranks = std::vector<std::int64_t>;

// ProcessRanks.from_num_invocations(machines, partition_servers), worked out by hand from
// torchbiggraph/distributed.py: consecutive groups in this order.
struct PbgCase {
  std::int64_t machines, partition_servers, world_size;
  Ranks trainers, parameter_servers, parameter_clients;
  std::int64_t lock_server;
  Ranks partition_servers_ranks;
};

}  // namespace

TEST_CASE("layout: biggraph_layout matches PyTorch-BigGraph's ProcessRanks", "[layout][unit]") {
  const std::vector<PbgCase> cases = {
      {1, 0, 4, {0}, {1}, {2}, 3, {}},
      {1, -1, 5, {0}, {1}, {2}, 3, {4}},
      {2, 1, 8, {0, 1}, {2, 3}, {4, 5}, 6, {7}},
      {2, -1, 9, {0, 1}, {2, 3}, {4, 5}, 6, {7, 8}},
      {3, 2, 12, {0, 1, 2}, {3, 4, 5}, {6, 7, 8}, 9, {10, 11}},
      {4, -5, 17, {0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, 12, {13, 14, 15, 16}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.machines, c.partition_servers);
    const auto l = ditask::biggraph_layout(c.machines, c.partition_servers);
    CHECK(l.world_size == c.world_size);
    CHECK(l.ranks_of("trainer") == c.trainers);
    CHECK(l.ranks_of("parameter_server") == c.parameter_servers);
    CHECK(l.ranks_of("parameter_client") == c.parameter_clients);
    CHECK(l.ranks_of("lock_server") == Ranks{c.lock_server});
    CHECK(l.ranks_of("partition_server") == c.partition_servers_ranks);
    CHECK(l.ranks_of("nobody").empty());
  }
  CHECK_THROWS_AS(ditask::biggraph_layout(0, 1), ditask::Error);
}

TEST_CASE("layout: the roles text and the line for people", "[layout][unit]") {
  const auto l = ditask::biggraph_layout(2, 1);
  CHECK(l.roles() == "trainer:0-1,parameter_server:2-3,parameter_client:4-5,lock_server:6,partition_server:7");
  CHECK(l.describe() ==
        "trainer 0-1, parameter_server 2-3, parameter_client 4-5, lock_server 6, partition_server 7, world size 8");
  const auto none = ditask::biggraph_layout(1, 0);
  CHECK(none.roles() == "trainer:0,parameter_server:1,parameter_client:2,lock_server:3");
  CHECK(none.describe() == "trainer 0, parameter_server 1, parameter_client 2, lock_server 3, partition_server none, "
                           "world size 4");
}

TEST_CASE("layout: --layout sets the roles and the worker count, or checks the count given", "[layout][unit]") {
  using ditask::launcher::apply_layout;
  ditask::launcher::Options o;
  apply_layout(o, "biggraph:machines=2,partition_servers=1", false, nullptr, false);
  CHECK(o.parallel_workers == 8);
  REQUIRE(o.roles.size() == 5);
  CHECK(o.roles[0].text == "trainer:0-1");
  CHECK(o.layout_text.rfind("trainer 0-1, ", 0) == 0);
  ditask::launcher::Options given;
  given.parallel_workers = 9;
  apply_layout(given, "biggraph:machines=2", true, nullptr, false);  // partition_servers defaults to -1
  CHECK(given.parallel_workers == 9);
  ditask::launcher::Options several;  // a job of several launchers: the whole job counts
  const std::string world = "8";
  several.parallel_workers = 4;
  apply_layout(several, "biggraph:machines=2,partition_servers=1", true, &world, false);
  CHECK(several.parallel_workers == 4);
  CHECK(several.roles.size() == 5);
}

TEST_CASE("layout: bad --layout text, a count that does not fit and --roles beside it are errors",
          "[layout][unit]") {
  using ditask::launcher::apply_layout;
  using ditask::launcher::parse_layout;
  CHECK_THROWS_WITH(parse_layout("ring:machines=2"), "--layout: unknown layout 'ring' (known: biggraph)");
  CHECK_THROWS_WITH(parse_layout("biggraph"), "--layout biggraph: machines=M is missing");
  CHECK_THROWS_WITH(parse_layout("biggraph:machines=-1"), "--layout biggraph:machines=-1: machines must be at least 1");
  CHECK_THROWS_WITH(parse_layout("biggraph:machines=2x"), "--layout biggraph:machines=2x: machines=2x is not a whole number");
  CHECK_THROWS_WITH(parse_layout("biggraph:machines=2,servers=1"),
                    "--layout biggraph:machines=2,servers=1: 'servers=1' is not machines=M or partition_servers=P");
  ditask::launcher::Options o;
  o.parallel_workers = 5;
  CHECK_NOTHROW(apply_layout(o, "biggraph:machines=1", true, nullptr, false));  // 5 workers: it fits
  CHECK_THROWS_WITH(apply_layout(o, "biggraph:machines=2", true, nullptr, false),
                    "--layout biggraph:machines=2 lays out 9 workers, but the job has 5 (--parallel-workers)");
  const std::string world = "6";
  CHECK_THROWS_WITH(apply_layout(o, "biggraph:machines=2", true, &world, false),
                    "--layout biggraph:machines=2 lays out 9 workers, but the job has 6 (--world-size)");
  CHECK_THROWS_WITH(apply_layout(o, "biggraph:machines=2", false, nullptr, true),
                    "--layout and --roles both give the roles");
}
