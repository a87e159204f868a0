// SPDX-License-Identifier: MIT
// The peer-group engine's policy, on the in-process transport (no sockets, no io thread):
// readiness and its errors, events held for a peer that has not joined (in order, bounded, under
// each --send-policy), targets and refusals, membership notices, the interest filter.
#include <catch2/catch.hpp>

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "error_of.hpp"
#include "transport/inproc.hpp"
#include "transport/peer_group.hpp"

namespace {

using ditask::EventArgs;
using ditask::test::error_of;
using ditask::detail::NodeSettings;
using ditask::detail::RemoteEvent;
using ditask::detail::SendTarget;
using ditask::detail::inproc::InprocTransport;
using ditask::detail::inproc::Network;

NodeSettings node(std::int64_t id) {
  NodeSettings s;
  s.node_id = id;
  s.run_id = "run";
  s.startup_timeout = std::chrono::minutes(5);  // a wait that must end ends by a join, not by time
  s.send_timeout = std::chrono::minutes(5);
  return s;
}

// What one node's task would see: events and notices, in arrival order, as "name:first-arg@sender".
struct Seen {
  std::mutex mutex;
  std::vector<std::string> lines;
  void add(std::vector<RemoteEvent>&& events) {
    std::lock_guard lock(mutex);
    for (auto& e : events) {
      const auto args = e.unpacked();
      std::string line = e.event;
      if (e.notice) {
        line += ":" + args.kwargs.value("node_id", nlohmann::json()).dump();
      } else {
        line += ":" + (args.args.empty() ? std::string() : args.args[0].dump()) + "@" +
                std::to_string(e.meta ? e.meta->sender : -1);
      }
      lines.push_back(line);
    }
  }
  std::vector<std::string> take() {
    std::lock_guard lock(mutex);
    return lines;
  }
};

struct Node {
  std::shared_ptr<InprocTransport> transport;
  std::shared_ptr<Seen> seen = std::make_shared<Seen>();
  Node(const std::shared_ptr<Network>& net, NodeSettings s, std::set<std::int64_t> expected) {
    transport = std::make_shared<InprocTransport>(net, std::move(s), std::move(expected));
    transport->attach([seen = seen](std::vector<RemoteEvent>&& events) { seen->add(std::move(events)); });
  }
  void emit_to(std::int64_t to, const std::string& name, int value) const {
    transport->send(SendTarget{to, ""}, name, EventArgs::from(value));
  }
};

}  // namespace

TEST_CASE("peer group: readiness waits for every expected peer and names the missing ones", "[unit][peer-group]") {
  auto net = std::make_shared<Network>();
  auto s = node(0);
  s.startup_timeout = std::chrono::milliseconds(1);
  Node a(net, s, {1, 2});
  a.transport->start();
  Node b(net, node(1), {0});
  b.transport->start();
  const auto e = error_of([&] { a.transport->wait_ready(); });
  CHECK(std::string(e.what()) ==
        "inproc not ready after 0.001 s: node 0 is still waiting for node 2 (inproc://2): not started");
  b.transport->wait_ready();  // node 1 expects only node 0, which is there
  Node c(net, node(2), {});
  c.transport->start();
  a.transport->wait_ready();
  CHECK(a.transport->peers().size() == 2);
}

TEST_CASE("peer group: a peer of another run is refused at once, each side saying why", "[unit][peer-group]") {
  auto net = std::make_shared<Network>();
  Node a(net, node(0), {1});
  a.transport->start();
  auto other = node(1);
  other.run_id = "another";
  Node b(net, other, {0});
  b.transport->start();
  const auto ea = error_of([&] { a.transport->wait_ready(); });
  CHECK_THAT(ea.what(), Catch::Equals("inproc cannot become ready: node 0 and node 1 (inproc://1): its run id is "
                                      "'another', this node's 'run'"));
  CHECK_THAT(ea.hint(), Catch::Contains("--run-id"));
  CHECK_THAT(error_of([&] { b.transport->wait_ready(); }).what(), Catch::Contains("its run id is 'run'"));
}

TEST_CASE("peer group: events for a peer that has not joined are held and arrive first, in order",
          "[unit][peer-group]") {
  auto net = std::make_shared<Network>();
  Node a(net, node(0), {1});
  a.transport->start();
  for (int i = 1; i <= 3; ++i) {
    a.emit_to(1, "e", i);
  }
  a.transport->send(SendTarget::all(), "all", EventArgs::from(4));
  CHECK(a.transport->stats().sent == 4);
  Node b(net, node(1), {0});
  b.transport->start();
  a.emit_to(1, "e", 5);
  const auto lines = b.seen->take();
  CHECK(lines == std::vector<std::string>{"e:1@0", "e:2@0", "e:3@0", "all:4@0", "ditask.peer_joined:0", "e:5@0"});
}

TEST_CASE("peer group: --send-policy drop counts what does not fit the hold queue", "[unit][peer-group]") {
  auto net = std::make_shared<Network>();
  auto s = node(0);
  s.send_queue_bytes = 1;  // one event always fits an empty queue; nothing more does
  s.drop_when_full = true;
  Node a(net, s, {1});
  a.transport->start();
  for (int i = 1; i <= 5; ++i) {
    a.emit_to(1, "event", i);
  }
  const auto stats = a.transport->stats();
  CHECK(stats.sent == 1);
  CHECK(stats.dropped == 4);
  Node b(net, node(1), {0});
  b.transport->start();
  CHECK(b.seen->take() == std::vector<std::string>{"event:1@0", "ditask.peer_joined:0"});
}

TEST_CASE("peer group: --send-policy wait holds the emit until the peer joins, losing nothing", "[unit][peer-group]") {
  auto net = std::make_shared<Network>();
  auto s = node(0);
  s.send_queue_bytes = 1;  // only the first event fits
  Node a(net, s, {1});
  a.transport->start();
  a.emit_to(1, "e", 1);
  auto second = std::async(std::launch::async, [&] { a.emit_to(1, "e", 2); });
  // However the two threads interleave, the second emit can only end after the join.
  Node b(net, node(1), {0});
  b.transport->start();
  second.get();
  // The events in order (node 1's notice of node 0 may come before or after the second: the
  // emitting thread wakes while the two nodes meet).
  std::vector<std::string> events;
  for (const auto& line : b.seen->take()) {
    if (!line.starts_with("ditask.")) {
      events.push_back(line);
    }
  }
  CHECK(events == std::vector<std::string>{"e:1@0", "e:2@0"});
  CHECK(a.transport->stats().dropped == 0);
}

TEST_CASE("peer group: --send-policy wait fails after --send-timeout naming the peer", "[unit][peer-group]") {
  auto net = std::make_shared<Network>();
  auto s = node(0);
  s.send_queue_bytes = 1;
  s.send_timeout = std::chrono::milliseconds(1);
  Node a(net, s, {1});
  a.transport->start();
  a.emit_to(1, "e", 1);
  const auto e = error_of([&] { a.emit_to(1, "e", 2); });
  CHECK(std::string(e.what()) == "event 'e' waited 0.001 s for node 1, which has not joined yet");
  CHECK_THAT(e.hint(), Catch::Contains("--send-timeout"));
  CHECK(a.transport->stats().sent == 1);  // the failed emit is not counted, nor held
}

TEST_CASE("peer group: targets by node and label, and refusals that name the connected peers", "[unit][peer-group]") {
  auto net = std::make_shared<Network>();
  auto s = node(0);
  s.finished_nodes = {5};
  s.max_frame_bytes = 64;
  Node a(net, s, {1, 2});
  a.transport->start();
  auto learner = node(1);
  learner.labels = {"learner"};
  Node b(net, learner, {});
  Node c(net, node(2), {});
  b.transport->start();
  c.transport->start();
  a.transport->send(SendTarget{std::nullopt, "learn*"}, "grad", EventArgs::from(7));
  a.transport->send(SendTarget{std::nullopt, "node.2"}, "grad", EventArgs::from(8));
  CHECK(b.seen->take().back() == "grad:7@0");
  CHECK(c.seen->take().back() == "grad:8@0");
  const auto stranger = error_of([&] { a.emit_to(9, "e", 1); });
  CHECK(std::string(stranger.what()) == "node 9 is not a peer of node 0");
  CHECK(stranger.hint() == "connected peers: 1, 2");
  CHECK_THAT(error_of([&] { a.emit_to(5, "e", 1); }).what(), Catch::Contains("node 5 finished (exited 0)"));
  CHECK_THAT(error_of([&] { a.transport->send(SendTarget::all(), "big", EventArgs::from(std::string(100, 'x'))); })
                 .what(),
             Catch::StartsWith("event 'big' is ") && Catch::Contains("more than --max-frame-bytes (64)"));
}

TEST_CASE("peer group: a peer leaving is a notice with its reason", "[unit][peer-group]") {
  auto net = std::make_shared<Network>();
  Node a(net, node(0), {1});
  Node b(net, node(1), {0});
  a.transport->start();
  b.transport->start();
  b.transport->shutdown(true);
  a.transport->shutdown();
  const auto lines = a.seen->take();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "ditask.peer_joined:1");
  CHECK(lines[1] == "ditask.peer_left:1");
  CHECK(a.transport->peers().empty());
}

TEST_CASE("peer group: the interest filter sends the layer's own names to every peer", "[unit][peer-group]") {
  using ditask::detail::interested;
  const std::vector<std::string> always{"ditask.", "finish"};
  const std::set<std::string> handles{"grad"};
  CHECK(interested(std::nullopt, always, "anything"));
  CHECK(interested(handles, always, "grad"));
  CHECK_FALSE(interested(handles, always, "obs"));
  CHECK(interested(handles, always, "ditask.rpc.call"));
  CHECK(interested(handles, always, "finish"));
  CHECK_FALSE(interested(handles, always, "finished"));
  CHECK_FALSE(interested(handles, {}, "finish"));  // a transport knows no names of its own
}

TEST_CASE("peer group: LogOnce says yes once per text, and stays bounded", "[unit][peer-group]") {
  ditask::detail::LogOnce once;
  CHECK(once.first_time("a"));
  CHECK_FALSE(once.first_time("a"));
  for (int i = 0; i < 2000; ++i) {
    once.first_time(std::to_string(i));
  }
  CHECK(once.first_time("new after the bound"));
  CHECK(once.first_time("new after the bound"));  // no longer remembered: logged again, never unbounded
}

namespace {

// A table whose connections are numbers and held events texts; its channels are the tests' own.
struct NumberedTraits {
  using Conn = int;  // 0: none
  using Held = std::string;
  struct Slot {};
  using ChannelRef = ditask::detail::Channel*;
  static ChannelRef channel(const auto& /*joined*/) { return nullptr; }
};

}  // namespace

TEST_CASE("peer group: a star hub relays to every joined peer but the sender, holds for spokes not joined",
          "[unit][peer-group]") {
  // The engine alone, over a table whose connections are numbers and held events texts.
  using Group = ditask::detail::PeerGroup<NumberedTraits>;
  auto s = node(0);
  s.send_queue_bytes = 1;  // one held copy per spoke, then drops
  ditask::detail::TransportCounters counters;
  Group group(s, "test", counters, std::nullopt);
  for (std::int64_t n = 1; n <= 4; ++n) {
    Group::Expected e;
    e.node = n;
    e.address = "test://" + std::to_string(n);
    group.table().expect(std::move(e));
  }
  for (std::int64_t n = 1; n <= 3; ++n) {
    ditask::detail::PeerRecord r;
    r.node = n;
    r.instance = static_cast<std::uint64_t>(n);
    group.table().join(r, static_cast<int>(10 * n), "");
  }
  // From node 1 (over connection 10): to 2 and 3; node 4 never joined: held.
  const auto to = group.relay_route_locked(10, 1, [] { return std::string("copy"); }, 4);
  CHECK(std::vector<int>(to.begin(), to.end()) == std::vector<int>{20, 30});
  CHECK(counters.sent == 1);
  group.relay_route_locked(10, 1, [] { return std::string("copy"); }, 4);  // its queue is full now
  CHECK(counters.dropped == 1);
  CHECK(group.relay_one_locked(3, [] { return std::string("one"); }, 3) == std::optional<int>(30));
  CHECK_FALSE(group.relay_one_locked(9, [] { return std::string("one"); }, 3).has_value());  // no peer: dropped
  CHECK(counters.dropped == 2);
}

namespace {

// A channel that answers each send with what the test scripted, and records what it was given.
class ScriptedChannel final : public ditask::detail::Channel {
 public:
  ScriptedChannel(std::string name, ditask::detail::SendResult result) : name_(std::move(name)), result_(result) {}
  std::string peer() const override { return name_; }
  std::size_t max_event_bytes() const noexcept override { return 16; }
  ditask::detail::SendResult send_event(ditask::detail::OutgoingEvent& event, std::uint64_t sender, std::uint16_t flags,
                                        bool drop_when_full, ditask::detail::Deadline& /*deadline*/,
                                        bool write_here) override {
    given.push_back(std::string(event.topic()) + " from " + std::to_string(sender) + " flags " + std::to_string(flags) +
                    (drop_when_full ? " drop" : " wait") + (write_here ? " here" : ""));
    return result_;
  }
  ditask::detail::Blocked blocked() const override { return {name_ + " (full)", "read faster"}; }
  std::size_t send_held(const std::vector<ditask::detail::HeldEvent>& events) override {
    for (const auto& e : events) {
      given.push_back("held " + e.body->topic + " from " + std::to_string(e.sender));
    }
    return unwanted_held;
  }
  std::vector<std::string> given;
  std::size_t unwanted_held = 0;  ///< what send_held() says the peer's task does not handle

 private:
  std::string name_;
  ditask::detail::SendResult result_;
};

}  // namespace

TEST_CASE("peer group: each channel's answer to a send is counted once, and a full one fails the send naming it",
          "[unit][peer-group]") {
  using ditask::detail::SendResult;
  using Group = ditask::detail::PeerGroup<NumberedTraits>;
  auto s = node(0);
  s.send_timeout = std::chrono::milliseconds(500);
  ditask::detail::TransportCounters counters;
  Group group(s, "test", counters, std::nullopt);
  ScriptedChannel queued("node 1", SendResult::queued), dropped("node 2", SendResult::dropped),
      left("node 3", SendResult::closed), unwanted("node 4", SendResult::unwanted), full("node 5", SendResult::timed_out);
  const std::string payload = "abc";
  ditask::detail::OutgoingEvent out("task.e", std::span(reinterpret_cast<const std::uint8_t*>(payload.data()), 3));
  ditask::detail::Deadline deadline(s.send_timeout);
  std::vector<ScriptedChannel*> four{&queued, &dropped, &left, &unwanted};
  CHECK(group.send_on(four, out, "e", 0, 1, deadline, true) == 1);
  CHECK(queued.given == std::vector<std::string>{"task.e from 0 flags 1 wait here"});
  CHECK(counters.sent == 1);
  CHECK(counters.dropped == 1);
  CHECK(counters.lost == 1);
  CHECK(counters.unhandled == 1);
  // The channels before the full one have it; the error names the full one, as every transport words it.
  std::vector<ScriptedChannel*> two{&queued, &full};
  const auto e = error_of([&] { group.send_on(two, out, "e", 0, 0, deadline, false); });
  CHECK(std::string(e.what()) == "event 'e': the send queue to node 5 (full) stayed full for 0.5 s");
  CHECK(e.hint() == "read faster");
  CHECK(counters.sent == 2);
  // A first join releases what was held, in order; what the peer does not handle is unhandled, not sent.
  struct Join {
    bool first = true;
    std::vector<ditask::detail::HeldEvent> held;
  } join;
  for (const char* topic : {"task.a", "task.b", "task.c"}) {
    join.held.push_back({std::make_shared<ditask::detail::Body>(ditask::detail::Body{topic, {}}), 7, 0});
  }
  ScriptedChannel joined("node 6", SendResult::queued);
  joined.unwanted_held = 1;
  group.release_held_locked(join, joined);
  CHECK(joined.given == std::vector<std::string>{"held task.a from 7", "held task.b from 7", "held task.c from 7"});
  CHECK(counters.sent == 1);  // 2, less the one it does not handle (counted sent when held)
  CHECK(counters.unhandled == 2);
  join.first = false;  // a later join: nothing held is released again
  group.release_held_locked(join, joined);
  CHECK(joined.given.size() == 3);
  // Frame limits are the channels': 16 bytes here.
  std::vector<ScriptedChannel*> one{&queued};
  CHECK_NOTHROW(Group::check_frame_limits(one, "e", 16));
  CHECK_THAT(error_of([&] { Group::check_frame_limits(one, "e", 17); }).what(),
             Catch::StartsWith("event 'e' is 17 bytes") && Catch::Contains("node 1"));
}

TEST_CASE("peer group: an event to one node whose link closed after it was chosen is an error, not a silent loss",
          "[unit][peer-group]") {
  using ditask::detail::SendResult;
  using Group = ditask::detail::PeerGroup<NumberedTraits>;
  auto s = node(0);
  ditask::detail::TransportCounters counters;
  Group group(s, "test", counters, std::nullopt);
  ScriptedChannel left("node 3", SendResult::closed);
  const std::string payload = "abc";
  ditask::detail::OutgoingEvent out("task.tick", std::span(reinterpret_cast<const std::uint8_t*>(payload.data()), 3));
  ditask::detail::Deadline deadline(s.send_timeout);
  std::vector<ScriptedChannel*> one{&left};
  // emit_to_node(3, ...): as for a node that is away, the emitter learns nothing was sent.
  const auto e = error_of([&] { group.send_on(one, out, "tick", 0, 1, deadline, false, std::int64_t{3}); });
  CHECK(std::string(e.what()) == "event 'tick' not sent: node 3 left just now (node 3 closed)");
  CHECK(e.hint() == "a restarted worker gets what is emitted after its hello: wait for ditask.peer_joined to send again");
  CHECK(counters.lost == 0);  // not sent, so not lost either
  // A broadcast goes on to the others: the one that just left counts it lost.
  CHECK(group.send_on(one, out, "tick", 0, 0, deadline, false) == 0);
  CHECK(counters.lost == 1);
}
