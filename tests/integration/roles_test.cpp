// SPDX-License-Identifier: MIT
// --roles end to end: the roles reach each worker (has_role, role.<name> labels), emit_to_role
// reaches exactly the peers with that role, --dry-run shows them, and bad --roles exits 2
// before any worker starts.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using namespace ditask::test::mesh;
using Catch::Matchers::Contains;

TEST_CASE("roles: each worker has its --roles, and emit_to_role reaches exactly those peers",
          "[integration][roles]") {
  auto r = run_ditask(mesh_args("roles", 4, {"--roles", "learner:0,evaluator:1,collector:2-"}), 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "roles=learner learner=1 labels=role.learner heard=2,3");
  CHECK(result_of(r.out, 1) == "roles=evaluator learner=0 labels=role.evaluator");
  CHECK(result_of(r.out, 2) == "roles=collector learner=0 labels=role.collector");
  CHECK(result_of(r.out, 3) == "roles=collector learner=0 labels=role.collector");
}

TEST_CASE("roles: one node with two roles, from DITASK_LAUNCH_ROLES", "[integration][roles]") {
  auto r = run_ditask(mesh_args("roles", 2, {}), 60s, {{"DITASK_LAUNCH_ROLES", "learner+evaluator:0,collector:1"}});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "roles=evaluator,learner learner=1 labels=role.evaluator,role.learner heard=1");
  CHECK(result_of(r.out, 1) == "roles=collector learner=0 labels=role.collector");
}

TEST_CASE("roles: --dry-run shows each worker's roles and DITASK_ROLES", "[integration][roles][dry-run]") {
  auto r = run_ditask({"--package", module_path("greeting"), "--parallel-workers", "3", "--roles",
                       "learner:0,collector:1-", "--dry-run"},
                      20s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const auto plan = nlohmann::json::parse(r.out);
  CHECK(plan["workers"][0]["roles"] == nlohmann::json::array({"learner"}));
  CHECK(plan["workers"][2]["roles"] == nlohmann::json::array({"collector"}));
  CHECK(plan["workers"][2]["env"]["DITASK_ROLES"] == "collector");
  CHECK(plan["options"]["roles"]["source"] == "command line");
}

TEST_CASE("roles: bad --roles exits 2 naming the node or the text, and starts nothing", "[integration][roles][bad-input]") {
  struct Case {
    const char* roles;
    const char* error;
  };
  const Case cases[] = {
      {"learner:0,collector:2-", "ditask: error: --roles: node 1 has no role in 'learner:0,collector:2-'"},
      {"learner:0,collector:0-", "ditask: error: --roles: node 0 is in two entries, 'learner:0' and 'collector:0-'"},
      {"learner=0", "ditask: error: --roles: 'learner=0' is not role:ids"},
      {"learner:one", "ditask: error: --roles: 'one' in 'learner:one' is not a node id, N-M or N-"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.roles);
    auto r = run_ditask({"--package", module_path("greeting"), "--parallel-workers", "3", "--roles", c.roles}, 20s);
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(c.error));
    CHECK_THAT(r.err, Contains("ditask: hint: "));
    CHECK(r.out.empty());
    CHECK_THAT(r.err, !Contains("[node "));
  }
}
