// SPDX-License-Identifier: MIT
// A group's rounds at its coordinator, without sockets: who arrived, whether they agree, the
// outcome, and rounds failed by a member leaving, a timeout or a stop.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "group/group_hub.hpp"
#include "group/group_round.hpp"

namespace {

using ditask::detail::GroupArrival;
using ditask::detail::GroupHub;
using ditask::detail::GroupRound;

GroupArrival arrival_of(std::string kind, nlohmann::json value = nullptr, std::string op = "sum", std::size_t root = 0) {
  GroupArrival a;
  a.kind = std::move(kind);
  a.members = {3, 5, 8};
  a.value = std::move(value);
  a.op = std::move(op);
  a.root = root;
  return a;
}

// Runs member `node`'s arrival on a thread of its own; the answer lands in `out`.
std::thread arrive_on_thread(GroupHub& hub, std::uint64_t round, std::int64_t node, GroupArrival a,
                             nlohmann::json& out, std::chrono::milliseconds timeout = std::chrono::minutes(1)) {
  return std::thread([&hub, round, node, a = std::move(a), &out, timeout]() mutable {
    out = hub.arrive("g", round, node, std::move(a), timeout);
  });
}

}  // namespace

TEST_CASE("group round: an all-reduce sums, maxes and mins element by element once all arrived", "[groups][unit]") {
  for (const auto& [op, want] : std::vector<std::pair<std::string, std::vector<double>>>{
           {"sum", {6, 15}}, {"max", {3, 8}}, {"min", {1, 2}}}) {
    GroupRound r(arrival_of("all_reduce", nullptr, op));
    CHECK_FALSE(r.add(3, arrival_of("all_reduce", {1, 5}, op)));
    CHECK_FALSE(r.complete());
    CHECK(r.missing() == std::vector<std::int64_t>{5, 8});
    CHECK_FALSE(r.add(5, arrival_of("all_reduce", {2, 8}, op)));
    CHECK_FALSE(r.add(8, arrival_of("all_reduce", {3, 2}, op)));
    REQUIRE(r.complete());
    CHECK(r.result().get<std::vector<double>>() == want);
  }
}

TEST_CASE("group round: a broadcast gives the root's value, a barrier gives nothing", "[groups][unit]") {
  GroupRound b(arrival_of("broadcast", nullptr, "sum", 1));
  CHECK_FALSE(b.add(8, arrival_of("broadcast", "c", "sum", 1)));
  CHECK_FALSE(b.add(3, arrival_of("broadcast", "a", "sum", 1)));
  CHECK_FALSE(b.add(5, arrival_of("broadcast", "b", "sum", 1)));
  CHECK(b.result() == "b");  // members[1] is node 5
  GroupRound barrier(arrival_of("barrier"));
  for (std::int64_t n : {3, 5, 8}) {
    CHECK_FALSE(barrier.add(n, arrival_of("barrier")));
  }
  CHECK(barrier.result().is_null());
}

TEST_CASE("group round: arrivals that do not fit are refused with the reason", "[groups][unit]") {
  GroupRound r(arrival_of("all_reduce", nullptr, "sum"));
  CHECK(*r.add(4, arrival_of("all_reduce", {1})) == "node 4 is not among the members [3, 5, 8]");
  CHECK_FALSE(r.add(3, arrival_of("all_reduce", {1})));
  CHECK(*r.add(3, arrival_of("all_reduce", {1})) == "node 3 arrived twice in one round");
  CHECK(*r.add(5, arrival_of("barrier")) == "node 5 called barrier where another member called all_reduce");
  CHECK(*r.add(5, arrival_of("all_reduce", {1}, "max")) == "node 5 reduces with max, another member with sum");
  auto other = arrival_of("all_reduce", {1});
  other.members = {3, 5};
  CHECK(*r.add(5, other) == "node 5 sees the members [3, 5], another member [3, 5, 8]");
  CHECK_FALSE(r.add(5, arrival_of("all_reduce", {1, 2})));
  CHECK_FALSE(r.add(8, arrival_of("all_reduce", {1})));
  CHECK_THROWS_WITH(r.result(), "node 5 passed 2 values, another member 1");
  GroupRound b(arrival_of("broadcast", nullptr, "sum", 0));
  CHECK(*b.add(3, arrival_of("broadcast", 1, "sum", 2)) ==
        "node 3 broadcasts from index 2, another member from index 0");
}

TEST_CASE("group hub: every member of a round gets the same answer, round after round", "[groups][unit]") {
  GroupHub hub;
  CHECK(hub.next_round("g") == 1);
  CHECK(hub.next_round("g") == 2);
  CHECK(hub.next_round("h") == 1);
  for (std::uint64_t round = 1; round <= 50; ++round) {
    nlohmann::json a, b, c;
    auto ta = arrive_on_thread(hub, round, 3, arrival_of("all_reduce", {1.0}), a);
    auto tb = arrive_on_thread(hub, round, 5, arrival_of("all_reduce", {2.0}), b);
    auto tc = arrive_on_thread(hub, round, 8, arrival_of("all_reduce", {4.0}), c);
    ta.join();
    tb.join();
    tc.join();
    REQUIRE(a["ok"] == true);
    CHECK(a["value"] == nlohmann::json::array({7.0}));
    CHECK(a == b);
    CHECK(b == c);
  }
}

TEST_CASE("group hub: a member that leaves fails the round it is in and every later one", "[groups][unit]") {
  GroupHub hub;
  nlohmann::json a, b;
  auto ta = arrive_on_thread(hub, 1, 3, arrival_of("barrier"), a);
  auto tb = arrive_on_thread(hub, 1, 5, arrival_of("barrier"), b);
  // Whether or not the arrivals came first, the round fails naming node 8.
  hub.node_left(8, 0, "connection lost");
  ta.join();
  tb.join();
  CHECK(a["ok"] == false);
  CHECK(a["kind"] == "member_left");
  CHECK(a["node"] == 8);
  CHECK(a["message"] == "member node 8 left (connection lost)");
  CHECK(a == b);
  const auto later = hub.arrive("g", 2, 3, arrival_of("barrier"), std::chrono::minutes(1));
  CHECK(later["kind"] == "member_left");
}

TEST_CASE("group hub: a round not complete in time fails naming who is missing, for late arrivals too",
          "[groups][unit]") {
  GroupHub hub;
  const auto first = hub.arrive("g", 1, 3, arrival_of("barrier"), std::chrono::milliseconds(1));
  CHECK(first["kind"] == "timeout");
  CHECK(first["message"] == "not every member arrived within 0.001 s: waiting for node(s) 5, 8");
  const auto late = hub.arrive("g", 1, 5, arrival_of("barrier"), std::chrono::minutes(1));
  CHECK(late == first);
}

TEST_CASE("group hub: a stop fails waiting rounds and refuses new ones", "[groups][unit]") {
  GroupHub hub;
  nlohmann::json a;
  auto ta = arrive_on_thread(hub, 1, 3, arrival_of("barrier"), a);
  hub.stop();
  ta.join();
  CHECK(a["kind"] == "stopped");
  CHECK(hub.arrive("g", 2, 5, arrival_of("barrier"), std::chrono::minutes(1))["kind"] == "stopped");
}

TEST_CASE("group hub: a coordinator that restarted since the group formed refuses its rounds as member_left",
          "[groups][unit]") {
  GroupHub hub;
  hub.set_attempt(1);  // this coordinator (node 3) is its first restart
  auto stale = arrival_of("barrier");
  stale.attempts = {0, 0, 0};  // the member formed its group with the first incarnation
  const auto refused = hub.arrive("g", 7, 5, stale, std::chrono::minutes(1));
  CHECK(refused["ok"] == false);
  CHECK(refused["kind"] == "member_left");
  CHECK(refused["node"] == 3);
  CHECK(refused["message"] == "its coordinator, member node 3, restarted since the group formed (attempt 0 then, 1 now)");
  // A group formed with this incarnation is served as usual.
  auto current = arrival_of("barrier");
  current.attempts = {1, 0, 0};
  CHECK(hub.arrive("g", 1, 5, current, std::chrono::milliseconds(1))["kind"] == "timeout");
}

TEST_CASE("group hub: after a member's restart the group formed anew with it works, the old one stays failed",
          "[groups][unit]") {
  GroupHub hub;
  hub.node_left(8, 0, "connection lost");  // node 8's first incarnation left
  auto old_group = arrival_of("barrier");
  old_group.attempts = {0, 0, 0};
  CHECK(hub.arrive("g", 1, 3, old_group, std::chrono::minutes(1))["kind"] == "member_left");
  auto renewed = arrival_of("all_reduce", nlohmann::json::array({1.0}));
  renewed.attempts = {0, 0, 1};  // node 8 came back as attempt 1
  nlohmann::json a, b, c;
  auto ta = arrive_on_thread(hub, 1, 3, renewed, a);
  auto tb = arrive_on_thread(hub, 1, 5, renewed, b);
  auto tc = arrive_on_thread(hub, 1, 8, renewed, c);
  ta.join();
  tb.join();
  tc.join();
  CHECK(a["ok"] == true);
  CHECK(a["value"] == nlohmann::json::array({3.0}));
  CHECK(a == b);
  CHECK(b == c);
}

namespace {

GroupArrival view_of(std::vector<std::int64_t> members, std::vector<std::int64_t> attempts) {
  GroupArrival a = arrival_of("barrier");
  a.members = std::move(members);
  a.attempts = std::move(attempts);
  return a;
}

}  // namespace

TEST_CASE("group hub: members that see different member lists all fail with mismatch, in any order",
          "[groups][unit]") {
  // --topology star: the hub (0) sees both spokes, each spoke only the hub. Their rounds have
  // different formation keys; none may wait for its timeout.
  GroupHub hub;
  for (std::uint64_t round = 1; round <= 20; ++round) {
    nlohmann::json a, b, c;
    const auto hours = std::chrono::hours(1);
    std::vector<std::thread> threads;
    threads.push_back(arrive_on_thread(hub, round, 0, view_of({0, 1, 2}, {0, 0, 0}), a, hours));
    threads.push_back(arrive_on_thread(hub, round, 1, view_of({0, 1}, {0, 0}), b, hours));
    threads.push_back(arrive_on_thread(hub, round, 2, view_of({0, 2}, {0, 0}), c, hours));
    if (round % 2 == 0) {
      std::reverse(threads.begin(), threads.end());
    }
    for (auto& t : threads) {
      t.join();
    }
    CAPTURE(round, a, b, c);
    CHECK(a["kind"] == "mismatch");
    CHECK(b["kind"] == "mismatch");
    CHECK(c["kind"] == "mismatch");
  }
}

TEST_CASE("group hub: two members with different member lists fail at once, not at the timeout", "[groups][unit]") {
  GroupHub hub;
  nlohmann::json a;
  auto ta = arrive_on_thread(hub, 1, 0, view_of({0, 1, 2}, {0, 0, 0}), a, std::chrono::hours(1));
  const auto b = hub.arrive("g", 1, 1, view_of({0, 1}, {0, 0}), std::chrono::hours(1));
  ta.join();
  CHECK(b["kind"] == "mismatch");
  CHECK(a == b);
  // Node 2, named by node 0's view, gets the same answer when it comes.
  CHECK(hub.arrive("g", 1, 2, view_of({0, 2}, {0, 0}), std::chrono::hours(1)) == b);
}

TEST_CASE("group hub: a disagreement does not fail the same round number of a group formed after a restart",
          "[groups][unit]") {
  GroupHub hub;
  nlohmann::json hub_view;
  auto th = arrive_on_thread(hub, 1, 0, view_of({0, 1, 2}, {0, 0, 0}), hub_view, std::chrono::hours(1));
  CHECK(hub.arrive("g", 1, 1, view_of({0, 1}, {0, 0}), std::chrono::hours(1))["kind"] == "mismatch");
  th.join();
  CHECK(hub_view["kind"] == "mismatch");
  // Node 2 (named, never come) keeps the disagreement on record. Node 1 restarts: the group
  // formed anew with its attempt 1 counts from round 1 and works.
  nlohmann::json a, b;
  auto ta = arrive_on_thread(hub, 1, 0, view_of({0, 1}, {0, 1}), a);
  auto tb = arrive_on_thread(hub, 1, 1, view_of({0, 1}, {0, 1}), b);
  ta.join();
  tb.join();
  CHECK(a["ok"] == true);
  CHECK(a == b);
}
