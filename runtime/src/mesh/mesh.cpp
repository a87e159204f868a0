// SPDX-License-Identifier: MIT
// The mesh: construction, start, the sink, readiness counters, peers, stats, shutdown.
// Its other parts: mesh_connect.cpp, mesh_join.cpp, mesh_route.cpp (one unity group).
#include "mesh.hpp"

#include "../trace/trace.hpp"

#include "make_mesh.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <charconv>
#include <cstring>
#include <cstdio>
#include <random>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/container/small_vector.hpp>

#include "../batch_thread.hpp"
#include "../codec/envelope.hpp"
#include "auth.hpp"
#include "refusal.hpp"
#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using generic = asio::generic::stream_protocol;

namespace {

constexpr std::chrono::milliseconds kByeLinger{2000};

constexpr std::chrono::milliseconds kMaxFlushWait{10'000};

std::uint64_t random_instance() {
  std::random_device random;
  std::uint64_t value = 0;
  while (value == 0) {
    value = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  }
  return value;
}

}  // namespace

namespace {
// A job of several launchers: readiness also waits for world_size - 1 peers in all.
std::optional<std::int64_t> world_rule(const MeshSettings& s) {
  return s.topology == "mesh" ? world_beyond_local(s) : std::nullopt;
}
}  // namespace

Mesh::Mesh(MeshSettings settings)
    : settings_(std::move(settings)),
      relay_plan_(settings_),
      runner_(io_,
              [](const std::exception& e) {
                DITASK_LOG(error, "mesh") << "network thread: " << e.what();
              }),
      listener_(io_),
      group_(settings_, "mesh", counters_, world_rule(settings_)),
      peers_(group_.table()) {
  own_hello_.run_id = settings_.run_id;
  own_hello_.run_id_explicit = settings_.run_id_explicit;
  own_hello_.node_id = settings_.node_id;
  own_hello_.attempt = settings_.attempt;
  own_hello_.instance = random_instance();
  own_hello_.labels = settings_.labels;
  own_hello_.labels.insert("node." + std::to_string(settings_.node_id));
  own_hello_.max_frame_bytes = settings_.max_frame_bytes;
  own_hello_.listen = settings_.listen;
  own_hello_.auth = !settings_.token.empty();
  if (settings_.world_size && *settings_.world_size > static_cast<std::int64_t>(settings_.local_nodes.size())) {
    own_hello_.world_size = *settings_.world_size;  // only a job of several launchers says its size
  }
  encode_hello(own_hello_);  // a label or run id the hello cannot carry is reported now, not per link
  own_meta_ = meta_of(own_hello_);
  identity_ = HandshakeIdentity{own_hello_, settings_.token};

  std::map<std::string, std::int64_t> node_at;
  for (const auto& n : settings_.local_nodes) {
    node_at[n.listen] = n.node_id;
  }
  for (const auto& address : settings_.dial) {
    if (address == settings_.listen) {
      self_delivery_ = true;  // DI-engine: a node that dials its own address hears its own emits
      continue;
    }
    const auto& dests = peers_.expected();
    if (std::any_of(dests.begin(), dests.end(), [&](const Dest& d) { return d.address == address; })) {
      continue;
    }
    Dest d;
    d.address = address;
    d.slot.dial = true;
    d.required = true;
    if (auto it = node_at.find(address); it != node_at.end()) {
      d.node = it->second;
      if (settings_.finished_nodes.count(it->second) != 0) {
        continue;  // it exited 0 before this worker started: it never comes back
      }
    }
    peers_.expect(std::move(d));
  }
  for (const auto& n : expected_inbound(settings_)) {
    if (peers_.find_node(n.node_id) == nullptr) {
      Dest d;
      d.node = n.node_id;
      d.address = n.listen;
      d.required = true;
      peers_.expect(std::move(d));
    }
  }
  // Every expected peer, and a few more for reconnects and strangers, from one block.
  read_buffers_ = std::make_shared<ReadBufferPool>(peers_.expected().size() + 4, Link::first_read_bytes());
}

Mesh::~Mesh() { shutdown(); }

std::optional<std::int64_t> Mesh::relay_hub_for(std::int64_t node) const {
  if (!relay_plan_.hub_for(node, false)) {
    return std::nullopt;  // not a spoke of a relaying star (the hot path takes no lock)
  }
  std::lock_guard lock(mutex_);
  return relay_plan_.hub_for(node, peers_.find_node(node) != nullptr);
}

void Mesh::start() {
  listener_.open(settings_.listen, settings_.listen_fd);
  work_.emplace(io_.get_executor());
  listener_.start([this](Socket socket, std::string peer, bool tcp) {
    start_link(std::move(socket), std::move(peer), "", tcp);  // "": accepted, not dialled
  });
  auto& dests = peers_.expected();
  for (std::size_t i = 0; i < dests.size(); ++i) {
    if (dests[i].slot.dial) {
      dests[i].slot.timer = std::make_shared<asio::steady_timer>(io_);
      asio::post(io_, [this, i] { dial(i); });
    }
  }
  thread_ = std::thread([this] {
    become_batch_thread();
    trace::name_thread("mesh io");
    runner_.io_thread_loop();
  });
  DITASK_LOG(debug, "mesh") << "node " << settings_.node_id << " listening on " << settings_.listen << ", "
                            << dests.size() << " expected peers";
}

void Mesh::hand_over(std::vector<RemoteEvent>&& events) { inbox_.hand_over(std::move(events)); }

void Mesh::attach(Sink sink) { inbox_.attach(std::move(sink)); }

void Mesh::detach() { inbox_.detach(); }

void Mesh::on_acked(std::uint64_t count) { counters_.acked += count; }

void Mesh::on_unhandled() { ++counters_.unhandled; }

std::vector<PeerInfo> Mesh::peers() const {
  std::lock_guard lock(mutex_);
  return peers_.peers();
}

TransportStats Mesh::stats() const { return counters_.snapshot(); }

TransportStats Mesh::final_stats() {
  std::lock_guard lock(mutex_);  // on_closed() counts and warns under it: both or neither
  counts_final_ = true;
  return counters_.snapshot();
}

void Mesh::shutdown(bool failed) noexcept {
  std::vector<std::shared_ptr<Link>> links;
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) {
      return;
    }
    shut_down_ = true;
    if (!thread_.joinable()) {
      return;
    }
    links = links_;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::min(settings_.send_timeout, kMaxFlushWait);
  for (const auto& link : links) {
    if (link->established()) {
      link->request_ack();  // every peer at once; the waits below then overlap
    }
  }
  for (const auto& link : links) {
    if (link->established() && !link->wait_acked(deadline)) {
      DITASK_LOG(warn, "mesh") << link->unacked() << " events sent to " << link->peer()
                               << " were not acknowledged before this node left";
    }
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    links = links_;
  }
  for (const auto& link : links) {
    if (link->established()) {
      link->leave(failed ? "failed" : "bye", "bye", kByeLinger);
    } else {
      link->close("this node is leaving");  // no hello yet: nobody to say bye to
    }
  }
  {
    std::unique_lock lock(mutex_);
    links_changed_.wait_for(lock, kByeLinger + std::chrono::milliseconds(500), [&] { return links_.empty(); });
  }
  asio::post(io_, [this] {
    listener_.close();
    for (auto& d : peers_.expected()) {
      if (d.slot.timer) {
        d.slot.timer->cancel();
      }
    }
  });
  work_.reset();
  io_.stop();
  runner_.stopped();
  thread_.join();
  listener_.unlink_path();
}

std::shared_ptr<Transport> make_mesh(const MeshSettings& settings) {
  auto mesh = std::make_shared<Mesh>(settings);
  mesh->start();
  return mesh;
}

namespace {
TransportStarter starter_of(MeshSettings settings) {
  return [settings = std::move(settings)](const NodeSettings& node) {
    MeshSettings s = settings;
    static_cast<NodeSettings&>(s) = node;  // the plan's node (the task layer set its topic prefix)
    return make_mesh(s);
  };
}
}  // namespace

TransportStarter mesh_starter(const WorkerEnv& env) {
  return starter_of(mesh_settings(env, std::getenv("DITASK_TOKEN"), std::getenv("DITASK_LISTEN_FD")));
}

TransportPlan mesh_plan(const MeshSettings& settings) {
  return TransportPlan{scheme_of(settings.listen), settings, starter_of(settings)};
}

}  // namespace ditask::detail::mesh
