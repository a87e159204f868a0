// SPDX-License-Identifier: MIT
// Meshes in one process for the unit tests: listening sockets, settings, an inbox that collects
// what a mesh hands over, a started pair, a raw client that says hello.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mesh/frame.hpp"
#include "mesh/hello.hpp"
#include "mesh/mesh.hpp"
#include "mesh/settings.hpp"

namespace ditask::test::mesh_fixture {

namespace mesh = ditask::detail::mesh;
using namespace std::chrono_literals;

/// A listening socket on a free loopback port (what the launcher hands a worker).
struct Listener {
  int fd = -1;
  std::string address;
};

inline Listener tcp_listener() {
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

inline Listener ipc_listener(const std::string& path) {
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
inline mesh::MeshSettings settings_for(std::int64_t local_id, const std::vector<Listener>& nodes) {
  mesh::MeshSettings s;
  s.node_id = local_id;
  s.local_id = local_id;
  s.run_id = "unit";
  s.topic_prefix = "task.";  // as worker mode sets it
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

inline ditask::EventArgs numbered(int i) { return ditask::EventArgs::from(i, ditask::kw("tag", "x")); }


/// A raw TCP client of `address` (tcp://127.0.0.1:P) that says hello as node `node_id` (wire
/// `version`).
inline int join_raw(const std::string& address, std::int64_t node_id, std::uint32_t version = mesh::kWireVersion) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  in.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&in), sizeof in) == 0);
  mesh::Hello h;
  h.version = version;
  h.run_id = "unit";
  h.node_id = node_id;
  h.attempt = 2;
  h.instance = 42;
  h.max_frame_bytes = 1 << 20;
  h.listen = "tcp://127.0.0.1:1";
  // The hello, and the welcome that accepts whoever answers (a raw client checks nothing).
  auto hello = mesh::encode(mesh::Frame{mesh::FrameType::hello, 0, 0, 0, "", mesh::encode_hello(h)});
  const auto welcome = mesh::encode(mesh::Frame{mesh::FrameType::welcome, 0, 0, 0, "", {}});
  hello.insert(hello.end(), welcome.begin(), welcome.end());
  REQUIRE(::write(fd, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size()));
  return fd;
}


}  // namespace ditask::test::mesh_fixture
