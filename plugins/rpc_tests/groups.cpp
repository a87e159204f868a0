// SPDX-License-Identifier: MIT
// Group collectives (task().group): entries of the rpc_tests module; each node prints
// "RESULT ..." lines that tests/integration/group_test.cpp checks.
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <ditask/ditask.hpp>

#include "rpc_tests.hpp"

using namespace mesh_tests;
using ditask::GroupError;

namespace {

std::string group_kind_text(GroupError::Kind kind) {
  switch (kind) {
    case GroupError::Kind::member_left: return "member_left";
    case GroupError::Kind::timeout: return "timeout";
    case GroupError::Kind::mismatch: return "mismatch";
    case GroupError::Kind::not_member: return "not_member";
    case GroupError::Kind::stopped: return "stopped";
  }
  return "?";
}

// "<kind>|<node>" of the GroupError `fn` throws, or "no error".
template <class F>
std::string group_error_of(F&& fn) {
  try {
    fn();
  } catch (const GroupError& e) {
    return group_kind_text(e.kind()) + "|" + std::to_string(e.node());
  }
  return "no error";
}

std::string numbers_text(const std::vector<double>& values) {
  std::string out;
  for (double v : values) {
    if (!out.empty()) {
      out += ',';
    }
    out += std::to_string(static_cast<long long>(v));
  }
  return out;
}

// This node's one role (the tests give each node one).
std::string own_role() {
  const auto roles = ditask::task().router().roles();
  return roles.empty() ? std::string() : *roles.begin();
}

}  // namespace

// Run with --roles trainer:0-2,server:3-4,lock:5: every node runs a barrier, a broadcast from
// its group's last member, a sum and a max in its own group, and a barrier of a group it is not
// in. Prints "RESULT group=<g> index=<i> members=<ids> bcast=<s> sum=<a,b> max=<m> other=<error>".
DITASK_MAIN(groups_three) {
  auto& task = ditask::task();
  auto running = task.start();
  task.ready();
  const std::string role = own_role();
  auto group = task.group(role);
  group.barrier();
  const auto bcast = group.broadcast(std::string("from node ") + std::to_string(node_id()), group.size() - 1);
  const auto sum = group.all_reduce({static_cast<double>(node_id()), 1.0});
  const auto max = group.all_reduce({static_cast<double>(node_id())}, ditask::ReduceOp::max);
  const std::string other_role = role == "lock" ? "trainer" : "lock";
  const auto other = group_error_of([&] { task.group(other_role).barrier(); });
  group.barrier();  // nobody leaves while a member of its group still waits for an answer
  result("group=" + role + " index=" + std::to_string(group.index()) + " members=" + joined(group.members()) +
         " bcast=" + bcast + " sum=" + numbers_text(sum) + " max=" + numbers_text(max) + " other=" + other);
}

// Run with --roles trainer:0-2 and module argument rounds=N: N barriers in a row, then one sum.
// Prints "RESULT rounds=<N> sum=<total>".
DITASK_MAIN(groups_many) {
  const Params p;
  auto& task = ditask::task();
  auto running = task.start();
  task.ready();
  auto group = task.group("trainer");
  const auto rounds = p.integer("rounds", 1000);
  for (std::int64_t i = 0; i < rounds; ++i) {
    group.barrier();
  }
  const auto sum = group.all_reduce({1.0});
  group.barrier();
  result("rounds=" + std::to_string(rounds) + " sum=" + numbers_text(sum));
}

// Run with --roles trainer:0-2 --auto-recover and module argument victim=K: node K's first
// incarnation dies once both other members told it they are about to enter the barrier; they
// see member_left naming K, wait for K's restart to join, form the group anew with it and
// all-reduce node ids: "RESULT error=<kind>|<node> renewed=3" (the restart: "renewed=3").
DITASK_MAIN(groups_member_dies) {
  const Params p;
  const std::int64_t victim = p.integer("victim", 2);
  auto& task = ditask::task();
  Shared<int> entering;
  Shared<bool> rejoined;
  auto running = task.start();
  rpc_tests::FinishWatch finish;  // from here: the driver may finish before this node waits for it
  task.on("entering", [&] { entering.update([](int& n) { ++n; }); });
  task.on(ditask::events::peer_joined, [&](const ditask::Kwargs& kw) {
    if (kw.get<std::int64_t>("node_id") == victim && kw.get<std::int64_t>("attempt") == 1) {
      rejoined.update([](bool& r) { r = true; });
    }
  });
  if (node_id() == victim) {
    if (attempt() > 0) {
      task.ready();  // the restart forms the group anew with the others
      const auto sum = task.group("trainer").all_reduce({static_cast<double>(node_id())});
      result("renewed=" + numbers_text(sum));
      finish.wait();  // the others end the job
      return;
    }
    task.ready();
    entering.wait([](int n) { return n == 2; }, "both members entering the barrier", std::chrono::minutes(2));
    say("DYING", "in the barrier's round");
    std::_Exit(3);
  }
  task.ready();
  auto group = task.group("trainer");
  task.emit_to_node(victim, "entering");
  const auto error = group_error_of([&] { group.barrier(); });
  // The job ends once the restart is back (a restart whose peers all left would wait for them);
  // the group formed anew with it works.
  rejoined.wait([](bool r) { return r; }, "the victim's restart", std::chrono::minutes(2));
  const auto sum = task.group("trainer").all_reduce({static_cast<double>(node_id())});
  result("error=" + error + " renewed=" + numbers_text(sum));
  const std::int64_t driver = victim == 0 ? 1 : 0;
  if (node_id() != driver) {
    finish.wait();  // the driver's stop ends the job
  }
}

// Run with --topology star and 3 workers, no roles: the hub sees both spokes, each spoke only
// the hub, so their member lists disagree. Every node's barrier fails with mismatch at once
// (the hub's too, which no spoke's round includes). The hub, the coordinator of all three
// rounds, stays until both spokes have their answer. Prints "RESULT members=<ids> barrier=<kind>|<node>".
DITASK_MAIN(groups_star) {
  auto& task = ditask::task();
  mesh_tests::Shared<int> answered;  // before the task: its handler may run until the task stops
  auto running = task.start();
  task.on("star_answered", [&] { answered.update([](int& n) { ++n; }); });
  std::optional<rpc_tests::FinishWatch> hub_finished;
  if (node_id() != 0) {
    hub_finished.emplace();
  }
  auto group = task.group("any");
  task.ready();
  std::string members;
  for (auto m : group.members()) {
    if (!members.empty()) {
      members += ',';  // not `("" or ",") + string`: GCC 12 warns (-Wrestrict) on that, wrongly
    }
    members += std::to_string(m);
  }
  const auto barrier = group_error_of([&] { group.barrier(std::chrono::minutes(2)); });
  result("members=" + members + " barrier=" + barrier);
  if (node_id() == 0) {
    answered.wait([](int n) { return n == 2; }, "both spokes' answers", std::chrono::minutes(2));
  } else {
    task.emit("star_answered");
    hub_finished->wait();
  }
}
