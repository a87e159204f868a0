// SPDX-License-Identifier: MIT
// The mesh in one process: two Mesh objects on real loopback sockets (tcp and ipc). Covers the
// parts a whole-job test cannot pin exactly: readiness, order, acknowledgements and the exact lost
// count, frame limits, token refusal, the early queue, address parsing.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "error_of.hpp"
#include "fixtures.hpp"
#include "mesh/address.hpp"
#include "mesh/mesh.hpp"
#include "mesh/settings.hpp"

namespace mesh = ditask::detail::mesh;
using namespace std::chrono_literals;
using ditask::test::error_of;

namespace {

/// A listening socket on a free loopback port (what the launcher hands a worker).
struct Listener {
  int fd = -1;
  std::string address;
};

Listener tcp_listener() {
  Listener l;
  l.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(l.fd, reinterpret_cast<sockaddr*>(&in), sizeof in) == 0);
  REQUIRE(::listen(l.fd, 64) == 0);
  socklen_t len = sizeof in;
  ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&in), &len);
  l.address = "tcp://127.0.0.1:" + std::to_string(ntohs(in.sin_port));
  return l;
}

Listener ipc_listener(const std::string& path) {
  Listener l;
  l.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  path.copy(un.sun_path, sizeof un.sun_path - 1);
  REQUIRE(::bind(l.fd, reinterpret_cast<sockaddr*>(&un), sizeof un) == 0);
  REQUIRE(::listen(l.fd, 64) == 0);
  l.address = "ipc://" + path;
  return l;
}

/// Settings of local worker `local_id` in a job of `nodes` (node id = local id), mesh topology.
mesh::MeshSettings settings_for(std::int64_t local_id, const std::vector<Listener>& nodes) {
  mesh::MeshSettings s;
  s.node_id = local_id;
  s.local_id = local_id;
  s.run_id = "unit";
  s.listen = nodes[static_cast<std::size_t>(local_id)].address;
  s.listen_fd = nodes[static_cast<std::size_t>(local_id)].fd;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    s.local_nodes.push_back({static_cast<std::int64_t>(i), static_cast<std::int64_t>(i), nodes[i].address});
    if (static_cast<std::int64_t>(i) < local_id) {
      s.dial.push_back(nodes[i].address);
    }
  }
  s.world_size = static_cast<std::int64_t>(nodes.size());
  s.startup_timeout = 10s;
  s.send_timeout = 10s;
  return s;
}

/// Collects what a mesh hands over. `ack` = tell each receipt at once (as the task's dispatcher
/// does after the handlers ran); otherwise receipts are kept, as if handlers were still running.
class Inbox {
 public:
  explicit Inbox(bool ack) : ack_(ack) {}

  mesh::Sink sink() {
    return [this](std::vector<ditask::detail::RemoteEvent>&& events) {
      std::lock_guard lock(mutex_);
      for (auto& e : events) {
        if (e.receipt && ack_) {
          e.receipt->done(e.seq, e.bytes, true);
        } else if (e.receipt) {
          held_.push_back(e.receipt);
        }
        events_.push_back(std::move(e));
      }
      changed_.notify_all();
    };
  }

  /// Drops what was collected, receipts included (before the meshes are destroyed: a receipt is a
  /// link of theirs).
  void clear() {
    std::lock_guard lock(mutex_);
    events_.clear();
    held_.clear();
  }

  /// Waits until `n` events named `name` arrived (at most 20 s); returns them.
  std::vector<ditask::detail::RemoteEvent> wait_for(const std::string& name, std::size_t n) {
    std::unique_lock lock(mutex_);
    std::vector<ditask::detail::RemoteEvent> out;
    changed_.wait_for(lock, 20s, [&] {
      out.clear();
      for (const auto& e : events_) {
        if (e.event == name) {
          out.push_back(e);
        }
      }
      return out.size() >= n;
    });
    return out;
  }

 private:
  bool ack_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<ditask::detail::RemoteEvent> events_;
  std::vector<std::shared_ptr<ditask::detail::Receipt>> held_;
};

/// Two started meshes; node 1 dials node 0.
struct Pair {
  Inbox in_a{true};
  Inbox in_b;
  std::unique_ptr<mesh::Mesh> a;
  std::unique_ptr<mesh::Mesh> b;

  ~Pair() {
    a->shutdown();
    b->shutdown();
    in_a.clear();
    in_b.clear();
  }

  explicit Pair(std::vector<Listener> nodes, bool b_acks = true,
                const std::function<void(mesh::MeshSettings&, mesh::MeshSettings&)>& tweak = {})
      : in_b(b_acks) {
    auto sa = settings_for(0, nodes);
    auto sb = settings_for(1, nodes);
    if (tweak) {
      tweak(sa, sb);
    }
    a = std::make_unique<mesh::Mesh>(sa);
    b = std::make_unique<mesh::Mesh>(sb);
    a->attach(in_a.sink());
    b->attach(in_b.sink());
    a->start();
    b->start();
  }
};

ditask::EventArgs numbered(int i) { return ditask::EventArgs::from(i, ditask::kw("tag", "x")); }

}  // namespace

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
  CHECK_THAT(e.what(), Catch::Contains("mesh cannot become ready") && Catch::Contains("wrong token"));
  CHECK_THAT(e.hint(), Catch::Contains("--token"));
  auto ea = error_of([&] { p.a->wait_ready(); });
  CHECK_THAT(ea.what(), Catch::Contains("node 1") && Catch::Contains("this node refused it: wrong token"));
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
             Catch::Contains("DITASK_PLAN: 'nodes/mesh' is malformed"));
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

namespace {

/// A raw TCP client of `address` (tcp://127.0.0.1:P) that says hello as node `node_id`.
int join_raw(const std::string& address, std::int64_t node_id) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  in.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&in), sizeof in) == 0);
  mesh::Hello h;
  h.run_id = "unit";
  h.node_id = node_id;
  h.attempt = 2;
  h.instance = 42;
  h.max_frame_bytes = 1 << 20;
  h.listen = "tcp://127.0.0.1:1";
  const auto hello = mesh::encode(mesh::Frame{mesh::FrameType::hello, 0, 0, 0, "", mesh::encode_hello(h)});
  REQUIRE(::write(fd, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size()));
  return fd;
}

}  // namespace

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
