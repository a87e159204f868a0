// SPDX-License-Identifier: MIT
// The transport-neutral peer table, without sockets: expected and joined peers, readiness,
// restarts against duplicates, events held before a first join, notices.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "transport/peer_table.hpp"

namespace {

using ditask::detail::PeerRecord;

// A connection is a shared token; a held event is its text; the slot says how we reach the peer.
struct TableTraits {
  using Conn = std::shared_ptr<int>;
  using Held = std::string;
  struct Slot {
    bool dial = false;
  };
};
using Table = ditask::detail::PeerTable<TableTraits>;

PeerRecord record(std::int64_t node, std::int64_t attempt = 0, std::uint64_t instance = 1, std::string listen = "") {
  PeerRecord r;
  r.node = node;
  r.attempt = attempt;
  r.instance = instance;
  r.listen = listen.empty() ? "tcp://127.0.0.1:" + std::to_string(7000 + node) : listen;
  r.labels = {"node." + std::to_string(node)};
  return r;
}

Table::Expected expected_node(std::int64_t node) {
  Table::Expected e;
  e.node = node;
  e.address = "tcp://127.0.0.1:" + std::to_string(7000 + node);
  e.required = true;
  return e;
}

}  // namespace

TEST_CASE("peer table: ready once every required peer joined, and only then", "[peer_table][unit]") {
  Table t;
  t.expect(expected_node(1));
  t.expect(expected_node(2));
  CHECK_FALSE(t.ready());
  CHECK(t.any_not_joined());
  auto conn1 = std::make_shared<int>(1);
  auto j = t.join(record(1), conn1, "");
  CHECK(j.first);
  CHECK(j.expected->node == 1);
  CHECK_FALSE(t.ready());
  const auto missing = t.missing([](const Table::Expected&) { return std::string("no hello yet"); });
  CHECK(missing == std::vector<std::string>{"node 2 (tcp://127.0.0.1:7002): no hello yet"});
  t.join(record(2), std::make_shared<int>(2), "");
  CHECK(t.ready());
  CHECK_FALSE(t.any_not_joined());
  const auto peers = t.peers();
  REQUIRE(peers.size() == 2);
  CHECK(peers[0].node_id == 1);
  CHECK(peers[1].address == "tcp://127.0.0.1:7002");
}

TEST_CASE("peer table: a peer known by its address only is matched when it joins", "[peer_table][unit]") {
  Table t;
  Table::Expected e;
  e.address = "ipc:///tmp/x.sock";
  e.required = true;
  e.slot.dial = true;
  t.expect(e);
  auto j = t.join(record(5, 0, 1, "ipc:///tmp/x.sock"), std::make_shared<int>(5), "ipc:///tmp/x.sock");
  CHECK(j.expected->slot.dial);
  CHECK(j.expected->node == 5);
  CHECK(t.ready());
  CHECK(t.expected().size() == 1);
}

TEST_CASE("peer table: a stranger that joins is added, and readiness ignores it", "[peer_table][unit]") {
  Table t;
  t.expect(expected_node(1));
  auto j = t.join(record(9), std::make_shared<int>(9), "");
  CHECK_FALSE(j.expected->required);
  CHECK(t.expected().size() == 2);
  CHECK_FALSE(t.ready());
  CHECK(t.joined(9) != nullptr);
}

TEST_CASE("peer table: a job of several launchers waits for world_size - 1 peers", "[peer_table][unit]") {
  Table alone(2);
  CHECK(alone.missing([](const Table::Expected&) { return std::string(); }) ==
        std::vector<std::string>{"1 peer (--world-size 2), of which 0 have connected"});
  Table t(4);
  t.expect(expected_node(1));
  t.join(record(1), std::make_shared<int>(1), "");
  CHECK_FALSE(t.ready());
  CHECK(t.missing([](const Table::Expected&) { return std::string(); }) ==
        std::vector<std::string>{"3 peers (--world-size 4), of which 1 has connected"});
  t.join(record(2), std::make_shared<int>(2), "");
  t.join(record(3), std::make_shared<int>(3), "");
  CHECK(t.ready());
}

TEST_CASE("peer table: events held before a first join are bounded and handed over once", "[peer_table][unit]") {
  Table t;
  auto& e = t.expect(expected_node(1));
  CHECK(t.hold(e, "a", 60, 100));  // one event always fits an empty queue, even a large one
  CHECK(t.hold(e, "b", 40, 100));
  CHECK_FALSE(t.hold(e, "c", 1, 100));
  CHECK_FALSE(Table::has_room(e, 1, 100));
  auto first = t.join(record(1), std::make_shared<int>(1), "");
  CHECK(first.first);
  CHECK(first.held == std::vector<std::string>{"a", "b"});
  CHECK(e.held.empty());
  CHECK(e.held_bytes == 0);
  CHECK(Table::has_room(e, 1000, 100));  // joined: nothing waits here any more
  auto again = t.join(record(1, 1, 2), std::make_shared<int>(11), "");
  CHECK_FALSE(again.first);
  CHECK(again.held.empty());
}

TEST_CASE("peer table: a newer attempt replaces a peer, the same or an older one duplicates it", "[peer_table][unit]") {
  Table t;
  t.expect(expected_node(1));
  t.join(record(1, 2, 100), std::make_shared<int>(1), "");
  CHECK(t.duplicate_of(record(1, 2, 100)) == nullptr);  // the same process
  REQUIRE(t.duplicate_of(record(1, 2, 200)) != nullptr);
  CHECK(t.duplicate_of(record(1, 2, 200))->record.instance == 100);
  CHECK(t.duplicate_of(record(1, 1, 200)) != nullptr);
  CHECK(t.duplicate_of(record(1, 3, 200)) == nullptr);  // a restart
  CHECK(t.duplicate_of(record(2, 0, 200)) == nullptr);
}

TEST_CASE("peer table: only the joined connection's close makes a peer leave", "[peer_table][unit]") {
  Table t;
  auto& e = t.expect(expected_node(1));
  auto old_conn = std::make_shared<int>(1);
  auto new_conn = std::make_shared<int>(2);
  t.join(record(1, 0, 1), old_conn, "");
  t.join(record(1, 1, 2), new_conn, "");  // the restart's link replaced the old one
  CHECK_FALSE(t.leave(1, old_conn).has_value());
  CHECK(e.conn == new_conn);
  CHECK(t.joined(1) != nullptr);
  const auto left = t.leave(1, new_conn);
  REQUIRE(left.has_value());
  CHECK(left->attempt == 1);
  CHECK(e.conn == nullptr);
  CHECK(t.joined(1) == nullptr);
  CHECK(e.joined_ever);  // readiness stays: it joined once
  CHECK(t.ready());
  CHECK_FALSE(t.leave(std::nullopt, new_conn).has_value());  // a link that never joined
}

TEST_CASE("peer table: a permanent refusal of a required peer is reported at once", "[peer_table][unit]") {
  Table t;
  auto& e = t.expect(expected_node(3));
  CHECK_FALSE(t.refused());
  e.permanent_error = "it refused us: wrong token";
  CHECK(t.refused());
  CHECK(t.refusals() == std::vector<std::string>{"node 3 (tcp://127.0.0.1:7003): it refused us: wrong token"});
}

TEST_CASE("peer table: membership notices carry what peers report", "[peer_table][unit]") {
  const auto joined = ditask::detail::peer_joined_notice(record(4, 2));
  CHECK(joined.notice);
  CHECK(joined.event == ditask::events::peer_joined);
  CHECK(joined.args->kwargs["node_id"] == 4);
  CHECK(joined.args->kwargs["attempt"] == 2);
  CHECK(joined.args->kwargs["address"] == "tcp://127.0.0.1:7004");
  CHECK(joined.args->kwargs["labels"] == nlohmann::json::array({"node.4"}));
  const auto left = ditask::detail::peer_left_notice(record(4, 2), "connection lost", 7);
  CHECK(left.event == ditask::events::peer_left);
  CHECK(left.args->kwargs["reason"] == "connection lost");
  CHECK(left.args->kwargs["lost"] == 7);
  CHECK_FALSE(left.args->kwargs.contains("address"));
}
