// SPDX-License-Identifier: MIT
// --roles: the grammar (ids, closed and open ranges, lists, several roles for one node), the
// errors that name the node or the text, and what the plan gives each worker.
#include "ditask/launcher/roles.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ditask/error.hpp"
#include "ditask/launcher/options.hpp"
#include "ditask/launcher/plan.hpp"
#include "error_of.hpp"

using ditask::launcher::parse_roles;
using ditask::launcher::roles_of;
using ditask::test::error_of;
using Strings = std::vector<std::string>;

namespace {

Strings roles_for(const std::string& text, std::int64_t node) { return roles_of(parse_roles(text), node); }

}  // namespace

TEST_CASE("roles: ids, ranges, open ranges and lists map node ids to roles", "[launcher][roles]") {
  const auto dqn = parse_roles("learner:0,evaluator:1,collector:2-");
  CHECK(roles_of(dqn, 0) == Strings{"learner"});
  CHECK(roles_of(dqn, 1) == Strings{"evaluator"});
  CHECK(roles_of(dqn, 2) == Strings{"collector"});
  CHECK(roles_of(dqn, 1000) == Strings{"collector"});
  CHECK(roles_for("a:0-2,b:3", 2) == Strings{"a"});
  CHECK(roles_for("a:0,3,5-7,b:1-2,4", 6) == Strings{"a"});
  CHECK(roles_for("a:0,3,5-7,b:1-2,4", 4) == Strings{"b"});
  CHECK(roles_for(" learner : 0 , collector : 1- ", 1) == Strings{"collector"});
}

TEST_CASE("roles: several roles for one node only when asked with a+b", "[launcher][roles]") {
  CHECK(roles_for("learner+evaluator:0,collector:1-", 0) == Strings{"evaluator", "learner"});
  const auto e = error_of([] { roles_for("learner:0,evaluator:0-1,collector:2-", 0); });
  CHECK(std::string(e.what()) == "--roles: node 0 is in two entries, 'learner:0' and 'evaluator:0-1'");
  CHECK(e.hint() == "one node gets several roles only when asked: learner+evaluator:0");
}

TEST_CASE("roles: a node no entry covers is named", "[launcher][roles]") {
  const auto e = error_of([] { roles_for("learner:0,collector:2-", 1); });
  CHECK(std::string(e.what()) == "--roles: node 1 has no role in 'learner:0,collector:2-'");
  CHECK_THAT(e.hint(), Catch::Contains("collector:2-"));
}

TEST_CASE("roles: malformed text is an error quoting it", "[launcher][roles]") {
  const auto what = [](const std::string& text) { return std::string(error_of([&] { parse_roles(text); }).what()); };
  CHECK(what("learner0") == "--roles: 'learner0' is not role:ids");
  CHECK(what("0,learner:1") == "--roles: '0' is not role:ids");
  CHECK(what("learner:x") == "--roles: 'x' in 'learner:x' is not a node id, N-M or N-");
  CHECK(what("learner:-1") == "--roles: '-1' in 'learner:-1' is not a node id, N-M or N-");
  CHECK(what("learner:3-1") == "--roles: the range '3-1' in 'learner:3-1' ends before it starts");
  CHECK(what("learner:0,,c:1") == "--roles: an empty entry in 'learner:0,,c:1'");
  CHECK(what("lea rner:0") == "--roles: 'lea rner' in 'lea rner:0' is not a role name (1-64 of A-Z a-z 0-9 _ . -)");
  CHECK(what("a++b:0") == "--roles: '' in 'a++b:0' is not a role name (1-64 of A-Z a-z 0-9 _ . -)");
  CHECK(what("a:0,c:1-2x") == "--roles: '1-2x' in 'c:1-2x' is not a node id, N-M or N-");
  CHECK_THAT(error_of([] { parse_roles("x"); }).hint(), Catch::Contains("learner:0,evaluator:1,collector:2-"));
}

TEST_CASE("roles: the plan gives each worker its roles and DITASK_ROLES, --dry-run shows them", "[launcher][roles]") {
  ditask::launcher::Options o;
  o.package = "./libfoo.so";
  o.parallel_workers = 4;
  o.node_ids = {10};
  o.roles = parse_roles("learner+evaluator:10,collector:11-");
  auto plan = ditask::launcher::plan_layout(o, "RUN");
  ditask::launcher::plan_wiring(plan, o);
  CHECK(plan.workers[0].roles == Strings{"evaluator", "learner"});
  CHECK(plan.workers[0].env.at("DITASK_ROLES") == "evaluator,learner");
  CHECK(plan.workers[3].env.at("DITASK_ROLES") == "collector");
  const auto json = ditask::launcher::plan_to_json(plan, o);
  CHECK(json["workers"][1]["roles"] == nlohmann::json::array({"collector"}));
  o.roles = parse_roles("learner:10,collector:12-");
  CHECK(std::string(error_of([&] { ditask::launcher::plan_layout(o, "RUN"); }).what()) ==
        "--roles: node 11 has no role in 'learner:10,collector:12-'");
}

TEST_CASE("roles: from the command line, DITASK_LAUNCH_ROLES or --config", "[launcher][roles]") {
  auto o = ditask::launcher::resolve_options({{"package", "x"}, {"parallel-workers", "2"}, {"roles", "a:0,b:1"}}, {});
  REQUIRE(o.roles.size() == 2);
  CHECK(o.origins.at("roles") == ditask::launcher::Source::command_line);
  auto e = ditask::launcher::resolve_options({{"package", "x"}}, {{"DITASK_LAUNCH_ROLES", "a:0-"}});
  REQUIRE(e.roles.size() == 1);
  CHECK(e.origins.at("roles") == ditask::launcher::Source::environment);
}
