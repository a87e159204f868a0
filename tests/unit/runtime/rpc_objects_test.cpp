// SPDX-License-Identifier: MIT
// The lifetime rules of remote objects (docs/rpc.md "Lifetime") on the handle tables of three
// nodes, without sockets: the handle messages the tables send are delivered by hand, in the
// orders the rules must survive.
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <memory>
#include <tuple>

#include "rpc/object_table.hpp"

namespace {

using ditask::detail::ObjectTable;
using ditask::detail::RefRecord;
using Op = ditask::detail::rpc_wire::RefOp;

/// Three nodes' tables (0 and 2 hold, 1 owns) and the handle messages between them.
struct ThreeNodes {
  struct Message {
    std::int64_t from, to;
    Op op;
    std::uint64_t object, token;
    std::int64_t about;
  };
  std::map<std::int64_t, std::shared_ptr<ObjectTable>> tables;
  std::deque<Message> sent;

  ThreeNodes() {
    for (std::int64_t node : {0, 1, 2}) {
      auto table = std::make_shared<ObjectTable>(
          node, [this, node](std::int64_t to, Op op, std::uint64_t object, std::uint64_t token, std::int64_t about) {
            sent.push_back({node, to, op, object, token, about});
          });
      table->set_self(table);
      tables[node] = table;
    }
  }
  ObjectTable& at(std::int64_t node) { return *tables.at(node); }
  /// Delivers the oldest message; returns it.
  Message deliver_one() {
    REQUIRE(!sent.empty());
    Message m = sent.front();
    sent.pop_front();
    at(m.to).on_ref(m.from, m.op, m.object, m.token, m.about);
    return m;
  }
  void deliver_all() {
    while (!sent.empty()) {
      deliver_one();
    }
  }
};

/// An object whose destruction is observed.
struct Probe {
  explicit Probe(bool& gone) : gone_(gone) {}
  ~Probe() { gone_ = true; }
  bool& gone_;
};

}  // namespace

TEST_CASE("rpc objects: the owner keeps an object while a holder it registered holds it", "[rpc][unit]") {
  ThreeNodes n;
  bool gone = false;
  auto mine = n.at(1).adopt(std::make_shared<Probe>(gone), "Probe");
  CHECK(mine->owner() == 1);
  CHECK(mine->local() != nullptr);
  const auto handle = n.at(1).to_json(mine, 0);  // the owner registers node 0 before sending
  CHECK(handle["p"] == true);
  auto held = n.at(0).from_json(handle, nullptr);
  CHECK(held->local() == nullptr);
  CHECK(n.sent.empty());  // nothing to confirm
  mine.reset();
  CHECK_FALSE(gone);  // node 0 still holds it
  CHECK(n.at(1).owned() == 1);
  held.reset();  // node 0's last copy: a release
  REQUIRE(n.sent.size() == 1);
  const auto release = n.deliver_one();
  CHECK(release.op == Op::release);
  CHECK(release.token == 1);  // one registration
  CHECK(gone);
  CHECK(n.at(1).owned() == 0);
  CHECK(n.at(0).held() == 0);
}

TEST_CASE("rpc objects: a handle passed on by a holder keeps it alive until the owner registered the receiver",
          "[rpc][unit]") {
  ThreeNodes n;
  bool gone = false;
  auto at_owner = n.at(1).adopt(std::make_shared<Probe>(gone), "Probe");
  auto at_0 = n.at(0).from_json(n.at(1).to_json(at_owner, 0), nullptr);
  at_owner.reset();
  const auto fork = n.at(0).to_json(at_0, 2);  // 0 -> 2: a fork with a token
  CHECK(fork["t"] != 0);
  at_0.reset();  // node 0's user copy goes; the fork still holds
  CHECK(n.sent.empty());
  auto at_2 = n.at(2).from_json(fork, nullptr);
  REQUIRE(n.sent.size() == 1);
  CHECK(n.sent.front().op == Op::add);
  CHECK(n.sent.front().to == 1);
  n.deliver_one();  // the owner registers node 2 and tells node 0
  REQUIRE(n.sent.size() == 1);
  CHECK(n.sent.front().op == Op::fork_done);
  CHECK(n.sent.front().to == 0);
  n.deliver_one();  // node 0 lets go: its release
  REQUIRE(n.sent.size() == 1);
  CHECK(n.sent.front().op == Op::release);
  n.deliver_one();
  CHECK_FALSE(gone);  // node 2 holds it
  at_2.reset();
  n.deliver_all();
  CHECK(gone);
}

TEST_CASE("rpc objects: copies share one record, and a node registered twice releases both", "[rpc][unit]") {
  ThreeNodes n;
  bool gone = false;
  auto at_owner = n.at(1).adopt(std::make_shared<Probe>(gone), "Probe");
  auto first = n.at(0).from_json(n.at(1).to_json(at_owner, 0), nullptr);
  auto second = n.at(0).from_json(n.at(1).to_json(at_owner, 0), nullptr);
  CHECK(first == second);
  CHECK(n.at(0).held() == 1);
  at_owner.reset();
  first.reset();
  CHECK(n.sent.empty());
  second.reset();
  REQUIRE(n.sent.size() == 1);
  CHECK(n.sent.front().token == 2);  // both registrations in one release
  n.deliver_all();
  CHECK(gone);
}

TEST_CASE("rpc objects: a holder that leaves releases its holds, and hand-offs to it are dropped", "[rpc][unit]") {
  ThreeNodes n;
  bool gone = false;
  auto at_owner = n.at(1).adopt(std::make_shared<Probe>(gone), "Probe");
  auto at_0 = n.at(0).from_json(n.at(1).to_json(at_owner, 0), nullptr);
  (void)n.at(0).to_json(at_0, 2);  // a hand-off to node 2, which dies before it arrives
  at_owner.reset();
  at_0.reset();
  CHECK(n.sent.empty());  // the fork holds node 0's record
  n.at(0).node_left(2);   // node 0 drops the hand-off: its release
  REQUIRE(n.sent.size() == 1);
  CHECK(n.sent.front().op == Op::release);
  n.deliver_all();
  CHECK(gone);

  bool gone_too = false;
  auto second = n.at(1).adopt(std::make_shared<Probe>(gone_too), "Probe");
  auto at_2 = n.at(2).from_json(n.at(1).to_json(second, 2), nullptr);
  second.reset();
  CHECK_FALSE(gone_too);
  n.at(1).node_left(2);  // the owner learns node 2 left
  CHECK(gone_too);
}

TEST_CASE("rpc objects: a handle that comes home is the owner's own, and its sender may let go", "[rpc][unit]") {
  ThreeNodes n;
  bool gone = false;
  auto at_owner = n.at(1).adopt(std::make_shared<Probe>(gone), "Probe");
  auto at_0 = n.at(0).from_json(n.at(1).to_json(at_owner, 0), nullptr);
  at_owner.reset();
  const auto home = n.at(0).to_json(at_0, 1);
  at_0.reset();
  auto back = n.at(1).from_json(home, nullptr);
  CHECK(back->local() != nullptr);
  REQUIRE(n.sent.size() == 1);
  CHECK(n.sent.front().op == Op::fork_done);
  n.deliver_all();  // fork_done, then node 0's release
  CHECK_FALSE(gone);  // the owner's own record holds it
  back.reset();
  CHECK(gone);
}

TEST_CASE("rpc objects: malformed handles and handles of another class are refused", "[rpc][unit]") {
  ThreeNodes n;
  CHECK_THROWS_WITH(n.at(0).from_json(ditask::json{{"x", 1}}, nullptr), Catch::Contains("not a remote-object handle"));
  // A "$rref" object without its fields, or with fields of the wrong type (a user's dict that
  // looks like one), is refused the same way, never with the JSON library's own exception.
  const ditask::json partial = {{"$rref", 1}, {"o", 1}};
  CHECK_THROWS_MATCHES(n.at(0).from_json(partial, nullptr), ditask::Error,
                       Catch::Matchers::Message("not a remote-object handle: " + partial.dump()));
  const ditask::json mistyped = {{"$rref", 1}, {"o", "one"}, {"i", 1}, {"c", "Probe"}, {"t", 0}, {"f", 1}, {"p", false}};
  CHECK_THROWS_MATCHES(n.at(0).from_json(mistyped, nullptr), ditask::Error,
                       Catch::Matchers::Message("not a remote-object handle: " + mistyped.dump()));
  bool gone = false;
  auto at_owner = n.at(1).adopt(std::make_shared<Probe>(gone), "Probe");
  const std::string other = "Other";
  CHECK_THROWS_WITH(n.at(0).from_json(n.at(1).to_json(at_owner, 0), &other),
                    Catch::Contains("a handle to a 'Probe' where a 'Other' was expected"));
  CHECK_THROWS_WITH(n.at(1).to_json(nullptr, 0), Catch::Contains("empty RRef"));
}

TEST_CASE("rpc objects: clear() destroys what a node owns and returns what it must release", "[rpc][unit]") {
  ThreeNodes n;
  bool gone = false;
  auto at_owner = n.at(1).adopt(std::make_shared<Probe>(gone), "Probe");
  auto at_0 = n.at(0).from_json(n.at(1).to_json(at_owner, 0), nullptr);
  const auto releases = n.at(0).clear();
  REQUIRE(releases.size() == 1);
  CHECK(releases[0] == std::make_tuple(std::int64_t{1}, at_0->id(), std::int64_t{1}));
  at_0.reset();
  CHECK(n.sent.empty());  // after clear(), drops are not told again
  at_owner.reset();
  CHECK_FALSE(gone);  // node 0 still counted until its release arrives
  (void)n.at(1).clear();
  CHECK(gone);
}

TEST_CASE("rpc objects: a handle the owner sends to itself keeps the object until it is received", "[rpc][unit]") {
  ThreeNodes n;
  bool gone = false;
  auto made = n.at(1).adopt(std::make_shared<Probe>(gone), "Probe");
  const auto handle = n.at(1).to_json(made, 1);  // a call's result from node 1 to node 1
  made.reset();  // the maker's copy goes before the caller received the result
  CHECK_FALSE(gone);
  auto received = n.at(1).from_json(handle, nullptr);
  CHECK(received->local() != nullptr);
  CHECK(n.sent.empty());
  received.reset();
  CHECK(gone);  // nobody else was registered
}
