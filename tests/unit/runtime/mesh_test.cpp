// SPDX-License-Identifier: MIT
// The mesh in one process: two Mesh objects on real loopback sockets (tcp and ipc). Covers the
// parts a whole-job test cannot pin exactly: readiness, order, acknowledgements and the exact lost
// count, frame limits, token refusal, the early queue, address parsing.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "error_of.hpp"
#include "fixtures.hpp"
#include "mesh_fixture.hpp"
#include "stderr_capture.hpp"
#include "ditask/runtime/write_all.hpp"
#include "mesh/address.hpp"
#include "mesh/mesh.hpp"
#include "mesh/settings.hpp"
#include "mesh/make_mesh.hpp"
#include "codec/envelope.hpp"
#include "internal_access.hpp"
#include "transport/inline_write.hpp"
#include "transport/make_transport.hpp"
#include <ditask/ditask.hpp>

namespace mesh = ditask::detail::mesh;
using namespace std::chrono_literals;
using ditask::test::error_of;
using ditask::test::StderrCapture;
using namespace ditask::test::mesh_fixture;

TEST_CASE("mesh: addresses parse, and bad ones are refused with the reason", "[mesh]") {
  auto tcp = mesh::parse_address("tcp://127.0.0.1:5000");
  CHECK(tcp.kind == mesh::Address::Kind::tcp);
  CHECK(tcp.host == "127.0.0.1");
  CHECK(tcp.port == 5000);
  CHECK(mesh::parse_address("tcp://[::1]:7").host == "::1");
  CHECK(mesh::parse_address("ipc:///tmp/x.sock").path == "/tmp/x.sock");
  CHECK_THAT(error_of([] { mesh::parse_address("udp://h:1"); }).what(), Catch::Contains("unknown scheme"));
  CHECK_THAT(error_of([] { mesh::parse_address("tcp://h"); }).what(), Catch::Contains("no port"));
  CHECK_THAT(error_of([] { mesh::parse_address("tcp://h:99999"); }).what(), Catch::Contains("bad port"));
  CHECK_THAT(error_of([] { mesh::parse_address("tcp://:5"); }).what(), Catch::Contains("no host"));
  CHECK_THAT(error_of([] { mesh::parse_address("ipc://rel/x"); }).what(), Catch::Contains("absolute"));
  const std::string long_path = "ipc:///" + std::string(120, 'p');
  CHECK_THAT(error_of([&] { mesh::parse_address(long_path); }).what(),
             Catch::Contains("a Unix socket path holds at most 107"));
}

TEST_CASE("mesh: expected inbound peers follow the dial rules", "[mesh]") {
  mesh::MeshSettings s;
  s.local_nodes = {{10, 0, "a"}, {11, 1, "b"}, {12, 2, "c"}};
  s.node_id = 11;
  s.local_id = 1;
  auto in = mesh::expected_inbound(s);
  REQUIRE(in.size() == 1);
  CHECK(in[0].node_id == 12);
  s.topology = "star";
  CHECK(mesh::expected_inbound(s).empty());
  s.node_id = 10;
  s.local_id = 0;
  CHECK(mesh::expected_inbound(s).size() == 2);
  s.topology = "alone";
  CHECK(mesh::expected_inbound(s).empty());
}

TEST_CASE("mesh: a finished local node is not expected, and a job of several launchers counts it out",
          "[mesh]") {
  mesh::MeshSettings s;
  s.local_nodes = {{10, 0, "a"}, {11, 1, "b"}, {12, 2, "c"}};
  s.node_id = 10;
  s.finished_nodes = {11};
  auto in = mesh::expected_inbound(s);
  REQUIRE(in.size() == 1);
  CHECK(in[0].node_id == 12);
  CHECK_FALSE(ditask::detail::world_beyond_local(s).has_value());  // one launcher: nodes are expected by name
  s.world_size = 3;
  CHECK_FALSE(ditask::detail::world_beyond_local(s).has_value());
  s.world_size = 8;
  CHECK(ditask::detail::world_beyond_local(s) == 7);  // 6 peers to join, not 7
}

TEST_CASE("mesh: two nodes become ready, events arrive once and in order, and are acknowledged", "[mesh]") {
  Pair p({tcp_listener(), tcp_listener()});
  p.a->wait_ready();
  p.b->wait_ready();
  REQUIRE(p.a->peers().size() == 1);
  CHECK(p.a->peers()[0].node_id == 1);
  CHECK(p.a->peers()[0].labels.count("node.1") == 1);
  CHECK(p.in_a.wait_for("ditask.peer_joined", 1).size() == 1);
  constexpr int kEvents = 5000;
  for (int i = 0; i < kEvents; ++i) {
    p.a->send(mesh::SendTarget::all(), "n", numbered(i));
  }
  auto got = p.in_b.wait_for("n", kEvents);
  REQUIRE(got.size() == kEvents);
  for (int i = 0; i < kEvents; ++i) {
    REQUIRE(got[static_cast<std::size_t>(i)].unpacked().get<int>(0) == i);
  }
  CHECK(got[0].unpacked().named().get<std::string>("tag") == "x");
  p.a->shutdown();  // waits for the acknowledgements
  const auto stats = p.a->stats();
  CHECK(stats.sent == kEvents);
  CHECK(stats.acked == kEvents);
  CHECK(stats.lost == 0);
  CHECK(p.b->stats().received == kEvents);
}

TEST_CASE("mesh: events a peer never acknowledged are counted as lost when it leaves", "[mesh]") {
  Pair p({tcp_listener(), tcp_listener()}, /*b_acks=*/false);
  p.a->wait_ready();
  p.b->wait_ready();
  for (int i = 0; i < 7; ++i) {
    p.a->send(mesh::SendTarget::all(), "n", numbered(i));
  }
  REQUIRE(p.in_b.wait_for("n", 7).size() == 7);
  p.b->shutdown();  // its handlers never finished: nothing was acknowledged
  auto left = p.in_a.wait_for("ditask.peer_left", 1);
  REQUIRE(left.size() == 1);
  CHECK(left[0].unpacked().named().get<std::string>("reason") == "bye");
  CHECK(left[0].unpacked().named().get<std::uint64_t>("lost") == 7);
  CHECK(p.a->stats().lost == 7);
}

TEST_CASE("mesh: once its final counters are taken, a peer that leaves is neither counted lost nor reported",
          "[mesh]") {
  // A worker stopped by SIGTERM writes these counters, then dies: a warning after them would say
  // events were lost that its --summary-json does not count.
  Pair p({tcp_listener(), tcp_listener()}, /*b_acks=*/false);
  p.a->wait_ready();
  p.b->wait_ready();
  for (int i = 0; i < 7; ++i) {
    p.a->send(mesh::SendTarget::all(), "n", numbered(i));
  }
  REQUIRE(p.in_b.wait_for("n", 7).size() == 7);
  StderrCapture log;
  const auto final_counters = p.a->final_stats();
  CHECK(final_counters.sent == 7);
  CHECK(final_counters.lost == 0);
  p.b->shutdown();  // nothing was acknowledged
  REQUIRE(p.in_a.wait_for("ditask.peer_left", 1).size() == 1);
  CHECK(p.a->stats().lost == 0);
  const std::string marker = "-- the end of what the peer's leaving logged --";
  ditask::detail::write_all(STDERR_FILENO, marker + "\n");  // after every line logged before it
  REQUIRE(log.wait_for(marker));
  CHECK_THAT(log.text(), !Catch::Matchers::Contains("not acknowledged"));
}

TEST_CASE("mesh: an event larger than the peer's frame limit fails locally and nothing is sent", "[mesh]") {
  Pair p({tcp_listener(), tcp_listener()}, true,
         [](mesh::MeshSettings&, mesh::MeshSettings& b) { b.max_frame_bytes = 4096; });
  p.a->wait_ready();
  auto big = ditask::EventArgs::from(std::vector<std::uint8_t>(8000, 1));
  auto e = error_of([&] { p.a->send(mesh::SendTarget::all(), "big", big); });
  CHECK_THAT(e.what(), Catch::Contains("more than node 1") && Catch::Contains("4096 bytes"));
  CHECK(p.a->stats().sent == 0);
  p.a->send(mesh::SendTarget::all(), "small", numbered(1));
  CHECK(p.in_b.wait_for("small", 1).size() == 1);
}

TEST_CASE("mesh: a peer with another token is refused and both waits fail at once, naming why", "[mesh]") {
  // A refusal retrying cannot change ends the wait without the (here long) startup timeout.
  Pair p({tcp_listener(), tcp_listener()}, true, [](mesh::MeshSettings& a, mesh::MeshSettings& b) {
    a.token = "token-of-the-job-0123";
    b.token = "another-token-456789";
    a.startup_timeout = b.startup_timeout = 50s;
  });
  auto e = error_of([&] { p.b->wait_ready(); });
  CHECK_THAT(e.what(), Catch::Contains("mesh cannot become ready") &&
                           Catch::Contains("it refused us: our token proof does not match its token"));
  CHECK_THAT(e.hint(), Catch::Contains("--token"));
  auto ea = error_of([&] { p.a->wait_ready(); });
  CHECK_THAT(ea.what(), Catch::Contains("node 1") &&
                            Catch::Contains("we refused it: its token proof does not match our token"));
  CHECK(p.a->peers().empty());
}

TEST_CASE("mesh: the same token admits the peer, over ipc", "[mesh]") {
  ditask::test::TempDir dir;
  const auto base = dir.path();
  Pair p({ipc_listener(base + "/a.sock"), ipc_listener(base + "/b.sock")}, true,
         [](mesh::MeshSettings& a, mesh::MeshSettings& b) { a.token = b.token = "shared-secret-of-16+"; });
  p.a->wait_ready();
  p.b->wait_ready();
  p.b->send(mesh::SendTarget::all(), "hi", numbered(3));
  CHECK(p.in_a.wait_for("hi", 1).size() == 1);
}

TEST_CASE("mesh: events for an expected peer that has not joined yet wait for it", "[mesh]") {
  std::vector<Listener> nodes{tcp_listener(), tcp_listener()};
  Inbox in_a(true);
  Inbox in_b(true);
  mesh::Mesh a(settings_for(0, nodes));
  a.attach(in_a.sink());
  a.start();
  for (int i = 0; i < 3; ++i) {
    a.send(mesh::SendTarget::all(), "early", numbered(i));  // node 1 is not running yet
  }
  mesh::Mesh b(settings_for(1, nodes));
  b.attach(in_b.sink());
  b.start();
  auto got = in_b.wait_for("early", 3);
  REQUIRE(got.size() == 3);
  CHECK(got[2].unpacked().get<int>(0) == 2);
  a.shutdown();
  b.shutdown();
  in_a.clear();
  in_b.clear();
}

TEST_CASE("mesh: emit to one node, to a label, and to an unknown node", "[mesh]") {
  Pair p({tcp_listener(), tcp_listener()}, true,
         [](mesh::MeshSettings&, mesh::MeshSettings& b) { b.labels = {"learner"}; });
  p.a->wait_ready();
  mesh::SendTarget to_one;
  to_one.node = 1;
  p.a->send(to_one, "direct", numbered(1));
  mesh::SendTarget learners;
  learners.label = "learn*";
  p.a->send(learners, "labelled", numbered(2));
  mesh::SendTarget nobody;
  nobody.label = "collector";
  p.a->send(nobody, "unheard", numbered(3));
  CHECK(p.in_b.wait_for("direct", 1).size() == 1);
  CHECK(p.in_b.wait_for("labelled", 1).size() == 1);
  mesh::SendTarget stranger;
  stranger.node = 42;
  CHECK_THAT(error_of([&] { p.a->send(stranger, "x", numbered(0)); }).what(),
             Catch::Contains("node 42 is not a peer of node 0"));
  p.a->shutdown();
  CHECK(p.b->stats().received == 2);
}

TEST_CASE("mesh: startup times out naming a peer that never answers", "[mesh]") {
  std::vector<Listener> nodes{tcp_listener(), tcp_listener()};
  ::close(nodes[0].fd);  // node 0's port is closed: nobody will ever answer
  auto s = settings_for(1, nodes);
  s.startup_timeout = 300ms;
  mesh::Mesh b(s);
  b.start();
  auto e = error_of([&] { b.wait_ready(); });
  CHECK_THAT(e.what(), Catch::Contains("node 0 (" + nodes[0].address + ")") &&
                           Catch::Contains("Connection refused"));
  CHECK_THAT(e.hint(), Catch::Contains("--startup-timeout"));
}

TEST_CASE("mesh: different run ids refuse a peer only when both sides set theirs explicitly", "[mesh]") {
  SECTION("both explicit and different: refused, and the wait names the run ids") {
    Pair p({tcp_listener(), tcp_listener()}, true, [](mesh::MeshSettings& a, mesh::MeshSettings& b) {
      a.run_id = "job-a";
      b.run_id = "job-b";
      a.run_id_explicit = b.run_id_explicit = true;
      a.startup_timeout = b.startup_timeout = 50s;
    });
    auto e = error_of([&] { p.b->wait_ready(); });
    CHECK_THAT(e.what(), Catch::Contains("run id") && Catch::Contains("job-a") && Catch::Contains("job-b"));
    CHECK(p.a->peers().empty());
  }
  SECTION("one side's run id is a fresh one: admitted (launchers joined by --attach-to)") {
    Pair p({tcp_listener(), tcp_listener()}, true, [](mesh::MeshSettings& a, mesh::MeshSettings& b) {
      a.run_id = "job-a";
      a.run_id_explicit = true;
      b.run_id = "20261129T000000-abcdef";
    });
    p.b->wait_ready();
    p.a->wait_ready();
    CHECK(p.a->peers().size() == 1);
  }
}

TEST_CASE("mesh: settings come from the contract and DITASK_PLAN, and bad values are named", "[mesh]") {
  ditask::WorkerEnv env;
  env.node_id = 3;
  env.local_id = 1;
  env.listen = "tcp://127.0.0.1:4000";
  env.attach_to = {"tcp://127.0.0.1:4001"};
  env.topology = "star";
  env.plan = ditask::json::parse(R"({"run_id_explicit": true, "nodes": [{"node_id": 2, "local_id": 0,
      "listen": "tcp://127.0.0.1:4001"}, {"node_id": 3, "local_id": 1, "listen": "tcp://127.0.0.1:4000"}],
      "mesh": {"startup_timeout_s": 2.5, "max_frame_bytes": 65536, "send_queue_bytes": 131072,
      "send_timeout_s": 4, "send_policy": "drop", "relay": true, "token": "from-the-plan"}})");
  auto s = mesh::mesh_settings(env, "from-the-env", "3");
  CHECK(s.node_id == 3);
  CHECK(s.listen_fd == 3);
  CHECK(s.run_id_explicit);
  CHECK(s.local_nodes.size() == 2);
  CHECK(s.startup_timeout == 2500ms);
  CHECK(s.max_frame_bytes == 65536);
  CHECK(s.send_queue_bytes == 131072);
  CHECK(s.send_timeout == 4000ms);
  CHECK(s.drop_when_full);
  CHECK(s.relay);
  CHECK(s.token == "from-the-plan");  // the plan wins; DITASK_TOKEN is for workers started without it
  env.plan["mesh"].erase("token");
  CHECK(mesh::mesh_settings(env, "from-the-env", nullptr).token == "from-the-env");

  const auto error_with = [&](const char* key, ditask::json value) {
    auto bad = env;
    bad.plan["mesh"][key] = std::move(value);
    return std::string(error_of([&] { mesh::mesh_settings(bad, nullptr, nullptr); }).what());
  };
  CHECK_THAT(error_with("startup_timeout_s", 0), Catch::Contains("'mesh.startup_timeout_s' must be a positive number"));
  CHECK_THAT(error_with("send_timeout_s", "soon"), Catch::Contains("'mesh.send_timeout_s'"));
  CHECK_THAT(error_with("max_frame_bytes", -1), Catch::Contains("'mesh.max_frame_bytes' must be a positive integer"));
  CHECK_THAT(error_with("send_policy", "sometimes"), Catch::Contains("must be 'wait' or 'drop', not 'sometimes'"));
  CHECK_THAT(error_of([&] { mesh::mesh_settings(env, nullptr, "three"); }).what(),
             Catch::Contains("DITASK_LISTEN_FD='three' is not a file descriptor"));
  auto bad_nodes = env;
  bad_nodes.plan["nodes"] = ditask::json::array({{{"node_id", "x"}}});
  CHECK_THAT(error_of([&] { mesh::mesh_settings(bad_nodes, nullptr, nullptr); }).what(),
             Catch::Contains("DITASK_PLAN: 'nodes/hosts/mesh' is malformed"));
  auto bad_dial = env;
  bad_dial.attach_to = {"udp://127.0.0.1:1"};
  CHECK_THAT(error_of([&] { mesh::mesh_settings(bad_dial, nullptr, nullptr); }).what(),
             Catch::Contains("bad mesh address 'udp://127.0.0.1:1'"));
}

TEST_CASE("mesh: the read buffer pool hands out distinct buffers until it is empty, and takes them back",
          "[mesh]") {
  mesh::ReadBufferPool pool(3, 1024);
  CHECK(pool.size() == 1024);
  std::vector<std::uint8_t*> taken;
  for (int i = 0; i < 3; ++i) {
    auto* b = pool.take();
    REQUIRE(b != nullptr);
    taken.push_back(b);
  }
  CHECK(pool.take() == nullptr);  // a link then allocates its own
  std::sort(taken.begin(), taken.end());
  CHECK(taken[1] - taken[0] >= 1024);  // no two overlap
  CHECK(taken[2] - taken[1] >= 1024);
  pool.give_back(taken[1]);
  CHECK(pool.take() == taken[1]);
  CHECK(pool.take() == nullptr);
}


TEST_CASE("mesh: a joined peer that breaks the protocol leaves with reason 'refused'", "[mesh]") {
  const std::vector<Listener> nodes{tcp_listener()};
  Inbox inbox(true);
  mesh::Mesh m(settings_for(0, nodes));
  m.attach(inbox.sink());
  m.start();
  const int fd = join_raw(nodes[0].address, 7);
  REQUIRE(inbox.wait_for("ditask.peer_joined", 1).size() == 1);
  const std::string garbage(64, 'x');  // not a frame: bad magic
  REQUIRE(::write(fd, garbage.data(), garbage.size()) == static_cast<ssize_t>(garbage.size()));
  const auto left = inbox.wait_for("ditask.peer_left", 1);
  REQUIRE(left.size() == 1);
  const auto kwargs = left[0].unpacked().named();
  CHECK(kwargs.get<std::int64_t>("node_id") == 7);
  CHECK(kwargs.get<std::int64_t>("attempt") == 2);
  CHECK(kwargs.get<std::string>("reason") == "refused");
  ::close(fd);
  m.shutdown();
  inbox.clear();
}

TEST_CASE("event meta: an event off the mesh names the peer that sent it, and a reply reaches it", "[mesh][meta]") {
  Pair p({tcp_listener(), tcp_listener()}, true, [](mesh::MeshSettings&, mesh::MeshSettings& b) {
    b.attempt = 4;
    b.labels = {"role.collector"};
  });
  p.a->wait_ready();
  p.b->wait_ready();
  p.b->send(mesh::SendTarget::all(), "ask", ditask::EventArgs::from(1));
  auto asked = p.in_a.wait_for("ask", 1);
  REQUIRE(asked.size() == 1);
  REQUIRE(asked[0].meta);
  const ditask::EventMeta& meta = *asked[0].meta;
  CHECK(meta.sender == 1);
  CHECK(meta.attempt == 4);
  CHECK(meta.labels == std::vector<std::string>{"node.1", "role.collector"});
  CHECK(meta.transport == "mesh");
  CHECK(meta.remote);
  p.a->send(mesh::SendTarget{meta.sender, {}}, "answer", ditask::EventArgs::from(2));
  auto answered = p.in_b.wait_for("answer", 1);
  REQUIRE(answered.size() == 1);
  CHECK(answered[0].meta->sender == 0);
}

TEST_CASE("task over the mesh: a peer's finish with a reason that is not a string stalls nothing", "[mesh][finish]") {
  // The task layer reads a finish's reason on the io thread; a malformed one must not throw there
  // (the batch would be lost and the link would stop reading).
  const std::vector<Listener> nodes{tcp_listener()};
  auto& task = ditask::task();
  ditask::detail::RouterIdentity identity;
  identity.node_id = 0;
  ditask::detail::RouterAccess::activate(task.router(), identity);
  ditask::detail::TransportPlan plan = mesh::mesh_plan(settings_for(0, nodes));
  ditask::detail::set_worker_transport_plan(plan);
  {
    auto running = task.start();
    auto pinged = task.waiter("ping");
    const int fd = join_raw(nodes[0].address, 7);
    std::vector<std::uint8_t> bytes;
    std::uint64_t seq = 0;
    for (const auto& [topic, args] :
         {std::pair{"task.finish", ditask::EventArgs::from(true, ditask::kw("reason", 5))},
          std::pair{"task.ping", ditask::EventArgs::from(1)}}) {
      const auto frame = mesh::encode(
          mesh::Frame{mesh::FrameType::event, 0, 7, ++seq, topic, ditask::detail::codec::encode_event_args(args)});
      bytes.insert(bytes.end(), frame.begin(), frame.end());
    }
    REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    const auto got = pinged.wait(20s);
    REQUIRE(got);
    CHECK(got->get<int>(0) == 1);
    CHECK_FALSE(task.finish());  // not an "ok" finish
    ::close(fd);
  }
  ditask::detail::shutdown_worker_transport(false);
  ditask::detail::RouterAccess::deactivate(task.router());
}

TEST_CASE("mesh: a relayed event names its original sender, from any peer (the hub of another launcher's star)",
          "[mesh][meta]") {
  const std::vector<Listener> nodes{tcp_listener()};
  Inbox inbox(true);
  mesh::Mesh m(settings_for(0, nodes));
  m.attach(inbox.sink());
  m.start();
  const int fd = join_raw(nodes[0].address, 7);
  REQUIRE(inbox.wait_for("ditask.peer_joined", 1).size() == 1);
  // Node 7 relays an event (and a finish) of node 99, as a relaying hub of another launcher's
  // star does for its spokes: this worker is no spoke of it, and still learns the sender.
  std::vector<std::uint8_t> bytes;
  std::uint64_t seq = 0;
  for (const char* topic : {"task.x", "task.finish"}) {
    const auto frame = mesh::encode(mesh::Frame{mesh::FrameType::event, mesh::kFlagRelayed, 99, ++seq, topic,
                                                ditask::detail::codec::encode_event_args(ditask::EventArgs::from(true))});
    bytes.insert(bytes.end(), frame.begin(), frame.end());
  }
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  const auto got = inbox.wait_for("finish", 1);
  REQUIRE(got.size() == 1);
  for (const auto& e : inbox.wait_for("x", 1)) {
    REQUIRE(e.meta);
    CHECK(e.meta->sender == 99);
    CHECK(e.relayed);
  }
  CHECK(got[0].meta->sender == 99);
  CHECK(got[0].relayed);
  ::close(fd);
  m.shutdown();
  inbox.clear();
}

TEST_CASE("mesh: events written by the emitting thread and by the io thread arrive complete and in order",
          "[mesh][inline_write]") {
  // One thread holds a grant for every send (each is written by it when the link is idle),
  // another never has one (the io thread writes its events), both at once; then a granted send
  // followed by a loop of ungranted ones, as a handler that replies and then streams.
  Pair p({tcp_listener(), tcp_listener()});
  p.a->wait_ready();
  p.b->wait_ready();
  constexpr int kEach = 3000;
  std::thread granted([&] {
    for (int i = 0; i < kEach; ++i) {
      ditask::detail::grant_inline_write();
      p.a->send(mesh::SendTarget{1, {}}, "x", numbered(i));
    }
  });
  std::thread batched([&] {
    for (int i = 0; i < kEach; ++i) {
      p.a->send(mesh::SendTarget{1, {}}, "y", numbered(i));
    }
  });
  granted.join();
  batched.join();
  ditask::detail::grant_inline_write();
  for (int i = 0; i < kEach; ++i) {
    p.a->send(mesh::SendTarget::all(), "z", numbered(i));
  }
  for (const char* name : {"x", "y", "z"}) {
    auto got = p.in_b.wait_for(name, kEach);
    REQUIRE(got.size() == kEach);
    for (int i = 0; i < kEach; ++i) {
      REQUIRE(got[static_cast<std::size_t>(i)].unpacked().get<int>(0) == i);
    }
  }
  p.a->shutdown();
  CHECK(p.a->stats().acked == 3 * kEach);
  CHECK(p.a->stats().lost == 0);
}

TEST_CASE("mesh: a large payload handed over whole (send_owned) and one read straight into its frame arrive intact",
          "[mesh][big]") {
  Pair p({tcp_listener(), tcp_listener()});
  p.a->wait_ready();
  p.b->wait_ready();
  std::vector<std::uint8_t> blob(3 << 20);
  for (std::size_t i = 0; i < blob.size(); ++i) {
    blob[i] = static_cast<std::uint8_t>(i * 31 + 7);
  }
  const auto payload = ditask::detail::codec::encode_event_args(ditask::EventArgs::from(blob));
  for (int i = 0; i < 4; ++i) {
    auto copy = payload;
    p.a->send_owned(mesh::SendTarget::all(), "big", std::move(copy));
  }
  p.a->send_packed(mesh::SendTarget::all(), "big", payload);
  auto got = p.in_b.wait_for("big", 5);
  REQUIRE(got.size() == 5);
  for (const auto& e : got) {
    CHECK(e.unpacked().get<std::vector<std::uint8_t>>(0) == blob);
  }
}
