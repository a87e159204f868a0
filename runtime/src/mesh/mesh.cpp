// SPDX-License-Identifier: MIT
#include "mesh.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cstdio>
#include <random>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/container/small_vector.hpp>

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

constexpr std::chrono::milliseconds kFirstBackoff{20};
constexpr std::chrono::milliseconds kMaxBackoff{1000};
constexpr std::chrono::milliseconds kRefuseLinger{1000};
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

/// `tcp://ip:port` of a connected socket's peer, or "a local peer" for Unix sockets.
std::string describe_peer(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "an unknown peer";
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    return "tcp://" + std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    return "tcp://[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "a local (ipc) peer";
}

std::string seconds_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

// What peer_left says of a joined peer whose link closed for `reason` (which is for people).
std::string leave_reason(const std::string& reason) {
  if (reason == "bye" || reason == "replaced" || reason == "failed") {
    return reason;
  }
  // This node closed it for breaking the protocol (Link: bad frame; Mesh: malformed event,
  // second hello, ...).
  if (reason == "refused" || reason.starts_with("bad frame") || reason == "a malformed event") {
    return "refused";
  }
  return "connection lost";
}

BodyPtr control_body(std::vector<std::uint8_t> payload) {
  auto body = std::make_shared<Body>();
  body->payload = std::move(payload);
  return body;
}

// Both sides of a pair may refuse each other at once (a token on one side only): keep both reasons.
void add_reason(std::string& reasons, const std::string& reason) {
  if (reasons.find(reason) == std::string::npos) {
    reasons += (reasons.empty() ? "" : "; ") + reason;
  }
}

bool labels_match(const std::set<std::string>& labels, const std::string& pattern) {
  return std::any_of(labels.begin(), labels.end(), [&](const std::string& label) {
    return ::fnmatch(pattern.c_str(), label.c_str(), 0) == 0;
  });
}

}  // namespace

Mesh::Mesh(MeshSettings settings) : settings_(std::move(settings)), acceptor_(io_) {
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
    if (std::any_of(dests_.begin(), dests_.end(), [&](const Dest& d) { return d.address == address; })) {
      continue;
    }
    Dest d;
    d.address = address;
    d.dial = true;
    d.required = true;
    if (auto it = node_at.find(address); it != node_at.end()) {
      d.node = it->second;
    }
    dests_.push_back(std::move(d));
  }
  for (const auto& n : expected_inbound(settings_)) {
    if (std::none_of(dests_.begin(), dests_.end(), [&](const Dest& d) { return d.node == n.node_id; })) {
      Dest d;
      d.node = n.node_id;
      d.address = n.listen;
      d.required = true;
      dests_.push_back(std::move(d));
    }
  }
  // Every expected peer, and a few more for reconnects and strangers, from one block.
  read_buffers_ = std::make_shared<ReadBufferPool>(dests_.size() + 4, Link::first_read_bytes());
}

Mesh::~Mesh() { shutdown(); }

bool Mesh::is_hub() const noexcept { return settings_.topology == "star" && settings_.local_id == 0; }

std::optional<std::int64_t> Mesh::relay_hub_for(std::int64_t node) const {
  if (!settings_.relay || settings_.topology != "star" || is_hub() || node == settings_.node_id) {
    return std::nullopt;
  }
  std::optional<std::int64_t> hub;
  bool in_job = false;
  for (const auto& n : settings_.local_nodes) {
    hub = n.local_id == 0 ? std::optional(n.node_id) : hub;
    in_job = in_job || n.node_id == node;
  }
  std::lock_guard lock(mutex_);
  const bool direct = std::any_of(dests_.begin(), dests_.end(), [&](const Dest& d) { return d.node == node; });
  return in_job && !direct ? hub : std::nullopt;
}

void Mesh::open_listener() {
  boost::system::error_code ec;
  if (settings_.listen_fd >= 0) {
    const int fd = settings_.listen_fd;
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // the module's own children must not inherit it
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
      throw Error("DITASK_LISTEN_FD=" + std::to_string(fd) + " is not a socket",
                  "worker mode is started by the ditask launcher");
    }
    const int family = ss.ss_family;
    acceptor_.assign(generic(family, family == AF_UNIX ? 0 : IPPROTO_TCP), fd, ec);
    if (ec) {
      throw Error("cannot use the listening socket of " + settings_.listen + ": " + ec.message());
    }
    return;
  }
  if (settings_.listen.empty()) {
    return;  // dial only
  }
  const Address a = parse_address(settings_.listen);
  generic::endpoint endpoint;
  if (a.kind == Address::Kind::ipc) {
    ::unlink(a.path.c_str());  // a stale socket file of an earlier run at this exact path
    endpoint = generic::endpoint(asio::local::stream_protocol::endpoint(a.path));
    bound_ipc_path_ = a.path;
  } else {
    asio::ip::tcp::resolver resolver(io_);
    auto results = resolver.resolve(a.host, std::to_string(a.port), ec);
    if (ec || results.empty()) {
      throw Error("cannot resolve " + settings_.listen + ": " + ec.message());
    }
    endpoint = generic::endpoint(results.begin()->endpoint());
  }
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec && a.kind == Address::Kind::tcp) {
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor_.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    throw Error("cannot listen on " + settings_.listen + ": " + ec.message(),
                "is another process using that address?");
  }
}

void Mesh::start() {
  open_listener();
  work_.emplace(io_.get_executor());
  if (acceptor_.is_open()) {
    accept_next();
  }
  for (std::size_t i = 0; i < dests_.size(); ++i) {
    if (dests_[i].dial) {
      dests_[i].timer = std::make_shared<asio::steady_timer>(io_);
      asio::post(io_, [this, i] { dial(i); });
    }
  }
  thread_ = std::thread([this] {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        DITASK_LOG(error, "mesh") << "network thread: " << e.what();
      }
    }
  });
  DITASK_LOG(debug, "mesh") << "node " << settings_.node_id << " listening on " << settings_.listen << ", "
                            << dests_.size() << " expected peers";
}

void Mesh::accept_next() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, generic::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
      return;
    }
    if (ec) {
      DITASK_LOG(warn, "mesh") << "accept on " << settings_.listen << " failed: " << ec.message();
      auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      timer->async_wait([this, timer](const boost::system::error_code&) { accept_next(); });
      return;
    }
    const std::string peer = describe_peer(socket.native_handle());
    start_link(std::move(socket), peer, false, "", settings_.listen.starts_with("tcp://"));
    accept_next();
  });
}

void Mesh::dial(std::size_t i) {
  std::string address;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || dests_[i].link) {
      return;
    }
    address = dests_[i].address;
  }
  const Address a = parse_address(address);
  if (a.kind == Address::Kind::ipc) {
    connect_to(i, address, {generic::endpoint(asio::local::stream_protocol::endpoint(a.path))}, 0);
    return;
  }
  // --hosts-file names first: a simulated cluster's hosts never reach the system resolver.
  const auto mapped = settings_.hosts.find(a.host);
  const std::string host = mapped == settings_.hosts.end() ? a.host : mapped->second;
  boost::system::error_code not_literal;
  const auto ip = asio::ip::make_address(host, not_literal);
  if (!not_literal) {  // an IP literal needs no resolver (and no resolver thread)
    connect_to(i, address, {generic::endpoint(asio::ip::tcp::endpoint(ip, a.port))}, 0);
    return;
  }
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(io_);
  resolver->async_resolve(host, std::to_string(a.port),
                          [this, i, address, resolver](const boost::system::error_code& ec,
                                                       const asio::ip::tcp::resolver::results_type& results) {
                            if (ec || results.empty()) {
                              dial_failed(i, "cannot resolve the host: " + ec.message());
                              return;
                            }
                            std::vector<generic::endpoint> endpoints;
                            for (const auto& r : results) {
                              endpoints.emplace_back(r.endpoint());
                            }
                            connect_to(i, address, std::move(endpoints), 0);
                          });
}

void Mesh::connect_to(std::size_t i, const std::string& address, std::vector<generic::endpoint> endpoints,
                      std::size_t k) {
  auto socket = std::make_shared<generic::socket>(io_);
  const auto endpoint = endpoints[k];
  socket->async_connect(endpoint, [this, i, address, socket, endpoints = std::move(endpoints),
                                   k](const boost::system::error_code& ec) mutable {
    if (ec) {
      if (k + 1 < endpoints.size()) {
        connect_to(i, address, std::move(endpoints), k + 1);
      } else {
        dial_failed(i, ec.message());
      }
      return;
    }
    const bool tcp = endpoints[k].protocol().family() != AF_UNIX;
    start_link(std::move(*socket), address, true, address, tcp);
  });
}

void Mesh::dial_failed(std::size_t i, const std::string& why) {
  std::shared_ptr<asio::steady_timer> timer;
  std::chrono::milliseconds wait{0};
  {
    std::lock_guard lock(mutex_);
    Dest& d = dests_[i];
    d.last_error = why;
    if (stopping_) {
      return;
    }
    d.backoff = std::clamp(d.backoff * 2, kFirstBackoff, kMaxBackoff);
    wait = d.backoff;
    timer = d.timer;
  }
  DITASK_LOG(debug, "mesh") << "dialling failed (" << why << "), again in " << wait.count() << " ms";
  timer->expires_after(wait);
  timer->async_wait([this, i](const boost::system::error_code& ec) {
    if (!ec) {
      dial(i);
    }
  });
}

void Mesh::start_link(Socket socket, std::string peer, bool dialled, std::string dial_address, bool tcp) {
  boost::system::error_code ignored;
  if (tcp) {
    socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  }
  // The nonce is only the token's challenge.
  std::string nonce = settings_.token.empty() ? std::string() : make_nonce();
  auto link = std::make_shared<Link>(std::move(socket), std::move(peer), dialled, std::move(nonce), *this,
                                     settings_.max_frame_bytes, settings_.send_queue_bytes, settings_.hello_timeout,
                                     read_buffers_);
  link->dial_address = std::move(dial_address);
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      return;
    }
    links_.push_back(link);
  }
  link->start();
  if (link->handshake.own_nonce().empty()) {  // the same hello for every peer: encoded once
    if (!own_hello_body_) {
      own_hello_body_ = control_body(encode_hello(own_hello_));
    }
    link->send_control(FrameType::hello, own_hello_body_);
    return;
  }
  Hello hello = own_hello_;
  hello.nonce = link->handshake.own_nonce();
  link->send_control(FrameType::hello, control_body(encode_hello(hello)));
}

void Mesh::on_frame(const std::shared_ptr<Link>& link, Frame&& frame) {
  switch (frame.type) {
    case FrameType::hello:
      on_hello(link, frame);
      return;
    case FrameType::auth:
      on_auth(link, frame);
      return;
    case FrameType::event:
      on_event(link, std::move(frame));
      return;
    case FrameType::welcome:
      if (link->handshake.welcomed()) {
        establish(link);
      }
      return;
    case FrameType::bye: {
      const Bye bye = decode_bye(frame.payload);
      const std::string& reason = bye.reason;
      if (!link->established) {
        // The refusal in our own words, as the refusing peer worded it for us.
        const std::string why = printable(bye.you.empty() ? reason : bye.you, 1024);
        if (first_time("refused by " + link->peer() + why)) {
          DITASK_LOG(error, "mesh") << link->peer() << " refused us: " << why;
        }
        if (link->dialled()) {
          std::lock_guard lock(mutex_);
          for (auto& d : dests_) {
            if (d.dial && d.address == link->dial_address) {
              d.last_error = "it refused us: " + why;
              if (bye.permanent) {
                add_reason(d.permanent_error, d.last_error);
              }
            }
          }
        }
        link->close_here("refused by the peer: " + why);
      } else {
        DITASK_LOG(debug, "mesh") << link->peer() << " said bye: " << reason;
        link->close_here(reason == "failed" ? "failed" : "bye");
      }
      return;
    }
    default:
      return;  // acks and pings are the link's business
  }
}

bool Mesh::first_time(const std::string& what) {
  std::lock_guard lock(mutex_);
  if (logged_.count(what) != 0) {
    return false;
  }
  if (logged_.size() < 1024) {
    logged_.insert(what);
  }
  return true;
}

void Mesh::refuse(const std::shared_ptr<Link>& link, const Refusal& why, std::optional<std::int64_t> node) {
  // A dialler retries: say it once at error level, the repeats at debug level.
  if (first_time("refused " + link->peer() + why.ours)) {
    DITASK_LOG(error, "mesh") << "refused " << link->peer() << ": " << why.ours;
  } else {
    DITASK_LOG(debug, "mesh") << "refused " << link->peer() << " again: " << why.ours;
  }
  link->handshake.mark_refused();
  link->stop_hello_timer();
  if (!node && link->hello()) {
    node = link->hello()->node_id;
  }
  if (why.permanent && node) {
    // An expected peer that can never join: a start() waiting for it fails now, not at the timeout.
    std::lock_guard lock(mutex_);
    for (auto& d : dests_) {
      if (d.required && !d.joined_ever && d.node == node) {
        add_reason(d.permanent_error, "we refused it: " + why.ours);
      }
    }
  }
  ready_changed_.notify_all();
  link->leave(why.ours, "refused", kRefuseLinger, why.permanent, why.theirs);
}

void Mesh::on_hello(const std::shared_ptr<Link>& link, const Frame& frame) {
  follow(link, link->handshake.on_hello(identity_, frame.payload));
}

void Mesh::on_auth(const std::shared_ptr<Link>& link, const Frame& frame) {
  follow(link, link->handshake.on_auth(identity_, frame.payload));
}

void Mesh::follow(const std::shared_ptr<Link>& link, const Handshake::Answer& answer) {
  if (answer.close) {
    DITASK_LOG(error, "mesh") << "closing connection with " << link->peer() << ": " << *answer.close;
    link->close_here(*answer.close);
    return;
  }
  if (answer.peer_node) {
    const std::string where = answer.peer_listen.empty() ? link->peer() : answer.peer_listen;
    link->set_peer_name("node " + std::to_string(*answer.peer_node) + " (" + where + ")");
  }
  if (answer.refuse) {
    refuse(link, *answer.refuse, answer.refuse_node);
    return;
  }
  if (!answer.send_auth.empty()) {
    link->send_control(FrameType::auth,
                       control_body(std::vector<std::uint8_t>(answer.send_auth.begin(), answer.send_auth.end())));
  }
  if (answer.check_and_accept) {
    accept(link);
  }
}

void Mesh::accept(const std::shared_ptr<Link>& link) {
  const Hello& h = *link->hello();
  std::optional<Refusal> refused;
  {
    std::lock_guard lock(mutex_);
    // Another process that holds this node id (joined, or accepted and waiting for its welcome).
    if (auto it = joined_.find(h.node_id); it != joined_.end() && it->second.hello.instance != h.instance &&
                                           h.attempt <= it->second.hello.attempt) {
      refused = refusal::duplicate_node(h.node_id, it->second.hello.attempt, it->second.hello.listen);
    }
    for (const auto& other : links_) {
      const auto& theirs = other->hello();
      if (!refused && other != link && other->handshake.has_accepted() && !other->established && theirs &&
          theirs->node_id == h.node_id && theirs->instance != h.instance && h.attempt <= theirs->attempt) {
        refused = refusal::duplicate_node(h.node_id, theirs->attempt, theirs->listen);
      }
    }
  }
  if (refused) {
    refuse(link, *refused, h.node_id);
    return;
  }
  const bool now = link->handshake.accepted();
  link->send_control(FrameType::welcome, nullptr);
  if (now) {
    establish(link);
  }
}

Mesh::Dest* Mesh::find_dest_locked(const Hello& hello, const std::string& dial_address) {
  for (auto& d : dests_) {
    if (d.node == hello.node_id || (!dial_address.empty() && d.address == dial_address) ||
        (!d.node && !hello.listen.empty() && d.address == hello.listen)) {
      return &d;
    }
  }
  return nullptr;
}

void Mesh::establish(const std::shared_ptr<Link>& link) {
  const Hello& h = *link->hello();
  std::shared_ptr<Link> old;
  std::optional<Refusal> refused;
  {
    std::lock_guard lock(mutex_);
    if (auto it = joined_.find(h.node_id); it != joined_.end()) {
      old = it->second.link;
      const Hello& was = it->second.hello;
      if (was.instance == h.instance) {
        // Both sides dialled: keep the link dialled by the higher node id, on both sides alike.
        const auto dialer = [&](const Link& l) { return l.dialled() ? settings_.node_id : h.node_id; };
        if (dialer(*link) <= dialer(*old)) {
          DITASK_LOG(debug, "mesh") << "closing a second link with " << link->peer();
          link->handshake.mark_refused();
          link->leave("duplicate link", "duplicate link", kRefuseLinger);
          return;
        }
      } else if (h.attempt <= was.attempt) {
        old = nullptr;
        refused = refusal::duplicate_node(h.node_id, was.attempt, was.listen);
      }
    }
  }
  if (refused) {
    refuse(link, *refused);
    return;
  }
  if (old) {
    old->close_here("replaced");  // its peer_left comes before the new incarnation's peer_joined
  }
  link->sender_meta = meta_of(h);
  link->handshake.mark_established();
  link->established = true;
  link->stop_hello_timer();
  {
    std::lock_guard lock(mutex_);
    joined_[h.node_id] = Joined{link, h};
    Dest* d = find_dest_locked(h, link->dial_address);
    if (d == nullptr) {
      dests_.push_back(Dest{});
      d = &dests_.back();
      d->address = h.listen;
    }
    d->node = h.node_id;
    d->link = link;
    d->backoff = std::chrono::milliseconds(0);
    d->last_error.clear();
    if (!d->joined_ever) {
      d->joined_ever = true;
      link->send_events_unbounded(d->early);
      d->early.clear();
      d->early_bytes = 0;
    }
    // A dest found by address may have a twin found by node id (both sides dialled): join both.
    for (auto& other : dests_) {
      if (&other != d && (other.node == h.node_id || (!other.node && other.address == h.listen))) {
        other.node = h.node_id;
        other.joined_ever = true;
      }
    }
    if (ready_locked()) {
      ready_changed_.notify_all();
    }
  }
  room_changed_.notify_all();
  DITASK_LOG(info, "mesh") << link->peer() << " joined (attempt " << h.attempt << ")";
  hand_over({notice(events::peer_joined, h, "", 0)});
}

std::shared_ptr<const EventMeta> Mesh::meta_of(const Hello& hello) {
  auto meta = std::make_shared<EventMeta>();
  meta->sender = static_cast<int>(hello.node_id);
  meta->attempt = static_cast<int>(hello.attempt);
  meta->labels.assign(hello.labels.begin(), hello.labels.end());
  meta->transport = "mesh";
  meta->remote = true;
  return meta;
}

std::shared_ptr<const EventMeta> Mesh::relayed_sender(std::uint64_t node) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = joined_.find(static_cast<std::int64_t>(node)); it != joined_.end() && it->second.link->sender_meta) {
      return it->second.link->sender_meta;
    }
  }
  // A spoke of a relaying star knows the other spokes only by the node id in the frame.
  auto meta = std::make_shared<EventMeta>();
  meta->sender = static_cast<int>(node);
  meta->attempt = -1;
  meta->transport = "mesh";
  meta->remote = true;
  return meta;
}

RemoteEvent Mesh::notice(const char* event, const Hello& hello, const std::string& reason,
                         std::uint64_t lost) const {
  RemoteEvent e;
  e.event = event;
  e.notice = true;
  auto& kwargs = e.args.emplace().kwargs;
  kwargs["node_id"] = hello.node_id;
  kwargs["attempt"] = hello.attempt;
  if (reason.empty()) {
    kwargs["labels"] = hello.labels;
    kwargs["address"] = hello.listen;
  } else {
    kwargs["reason"] = reason;
    kwargs["lost"] = lost;
  }
  return e;
}

void Mesh::on_event(const std::shared_ptr<Link>& link, Frame&& frame) {
  const std::size_t bytes = frame.topic.size() + frame.payload.size();
  if (!link->established) {
    DITASK_LOG(error, "mesh") << "closing connection with " << link->peer() << ": an event before the hello";
    link->close_here("an event before the hello");
    return;
  }
  ++received_;
  if (settings_.relay && is_hub() && (frame.flags & kFlagRelayed) == 0 && frame.topic.starts_with(kRelayPrefix)) {
    if (!relay_to_one(link, frame)) {
      return;  // forwarded (or counted as dropped): not this node's event
    }
  }
  if (!frame.topic.starts_with(settings_.topic_prefix)) {
    DITASK_LOG(debug, "mesh") << "ignoring topic '" << frame.topic << "' from " << link->peer();
    link->done(frame.seq, bytes, false);
    return;
  }
  RemoteEvent e;
  try {
    e.packed = codec::locate_event_args(frame.payload);
    if (!e.packed) {
      e.args = codec::decode_event_args(frame.payload);
    }
  } catch (const std::exception& ex) {
    DITASK_LOG(error, "mesh") << "closing connection with " << link->peer() << ": event '"
                              << frame.topic.substr(settings_.topic_prefix.size()) << "': " << ex.what();
    link->close_here("a malformed event");
    return;
  }
  if (settings_.relay && is_hub() && (frame.flags & kFlagRelayed) == 0) {
    relay(link, std::make_shared<Body>(Body{frame.topic, frame.payload}), frame.sender);
  }
  if (e.packed) {
    e.packed->bytes = std::move(frame.payload);
  }
  e.event = frame.topic.substr(settings_.topic_prefix.size());
  e.receipt = link;
  e.seq = frame.seq;
  e.bytes = bytes;
  e.meta = link->sender_meta;
  if ((frame.flags & kFlagRelayed) != 0 && link->hello() &&
      frame.sender != static_cast<std::uint64_t>(link->hello()->node_id)) {
    e.meta = relayed_sender(frame.sender);
  }
  batches_[link.get()].push_back(std::move(e));
}

bool Mesh::relay_to_one(const std::shared_ptr<Link>& from, Frame& frame) {
  // "relay.<node>/task.<event>": a spoke's emit_to_node for another spoke.
  const std::size_t bytes = frame.topic.size() + frame.payload.size();  // what the link counted in
  const auto slash = frame.topic.find('/');
  std::int64_t node = -1;
  const char* digits = frame.topic.data() + std::strlen(kRelayPrefix);
  const char* end = frame.topic.data() + (slash == std::string::npos ? 0 : slash);
  if (slash == std::string::npos || std::from_chars(digits, end, node).ptr != end) {
    return true;  // not a relay topic after all: the task. check below ignores it
  }
  frame.topic.erase(0, slash + 1);
  if (node == settings_.node_id) {
    return true;  // for the hub itself: an ordinary event from here on
  }
  auto body = std::make_shared<Body>(Body{frame.topic, std::move(frame.payload)});
  std::shared_ptr<Link> to;
  {
    std::lock_guard lock(mutex_);
    if (auto j = joined_.find(node); j != joined_.end()) {
      to = j->second.link;
    } else {
      const auto d = std::find_if(dests_.begin(), dests_.end(), [&](const Dest& x) { return x.node == node; });
      if (d != dests_.end() && !d->joined_ever) {
        hold_relayed_locked(*d, body, frame.sender);
      } else {
        relay_dropped("node " + std::to_string(node), "it is not connected");
      }
    }
  }
  if (to) {
    forward_relayed(to, body, frame.sender);
  }
  from->done(frame.seq, bytes, true);  // the hub's part is done: forwarded, held, or counted as dropped
  return false;
}

void Mesh::relay(const std::shared_ptr<Link>& from, const BodyPtr& body, std::uint64_t sender) {
  std::vector<std::shared_ptr<Link>> to;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [node, j] : joined_) {
      if (j.link != from && static_cast<std::uint64_t>(node) != sender) {
        to.push_back(j.link);
      }
    }
    // A spoke that has not joined yet gets it after its hello, like any event emitted early.
    for (auto& d : dests_) {
      if (!d.joined_ever && !d.link && !(d.node && static_cast<std::uint64_t>(*d.node) == sender)) {
        hold_relayed_locked(d, body, sender);
      }
    }
  }
  for (const auto& link : to) {
    forward_relayed(link, body, sender);
  }
}

void Mesh::forward_relayed(const std::shared_ptr<Link>& to, const BodyPtr& body, std::uint64_t sender) {
  OutgoingEvent out(body);
  Deadline now(std::chrono::milliseconds(0));
  const SendResult result = body->size() > to->hello()->max_frame_bytes
                                ? SendResult::dropped
                                : to->send_event(out, sender, kFlagRelayed, true, now);
  switch (result) {
    case SendResult::queued:
      ++sent_;
      return;
    case SendResult::closed:
      ++lost_;  // as for a direct send: the spoke was just leaving
      return;
    default:
      relay_dropped(to->peer(), "its send queue is full or the event too large");
  }
}

void Mesh::hold_relayed_locked(Dest& d, const BodyPtr& body, std::uint64_t sender) {
  if (d.early_bytes > 0 && d.early_bytes + body->size() > settings_.send_queue_bytes) {
    relay_dropped(name_of(d), "its queue for before it joins is full");
    return;
  }
  d.early.push_back(Link::Pending{body, sender, kFlagRelayed});
  d.early_bytes += body->size();
  ++sent_;
}

void Mesh::relay_dropped(const std::string& whom, const char* why) {
  if (++dropped_ % 1000 == 1) {  // counted always, logged the first time and then every 1000th
    DITASK_LOG(warn, "mesh") << "relay dropped an event for " << whom << " (" << dropped_.load()
                             << " dropped so far): " << why;
  }
}

void Mesh::on_read_batch_end(const std::shared_ptr<Link>& link) {
  auto it = batches_.find(link.get());
  if (it == batches_.end()) {
    return;
  }
  auto events = std::move(it->second);
  batches_.erase(it);
  if (events.empty()) {
    return;
  }
  hand_over(std::move(events));
}

void Mesh::hand_over(std::vector<RemoteEvent>&& events) {
  std::unique_lock lock(sink_mutex_);
  if (sink_) {
    sink_(std::move(events));
    return;
  }
  if (!had_sink_) {
    prestart_.insert(prestart_.end(), std::make_move_iterator(events.begin()),
                     std::make_move_iterator(events.end()));
    return;
  }
  lock.unlock();
  for (auto& e : events) {
    if (e.receipt) {
      e.receipt->done(e.seq, e.bytes, false);
    }
  }
}

void Mesh::attach(Sink sink) {
  std::lock_guard lock(sink_mutex_);
  sink_ = std::move(sink);
  had_sink_ = true;
  if (!prestart_.empty()) {
    sink_(std::move(prestart_));
    prestart_.clear();
  }
}

void Mesh::detach() {
  std::lock_guard lock(sink_mutex_);
  sink_ = nullptr;
}

void Mesh::on_closed(const std::shared_ptr<Link>& link, const std::string& reason, std::uint64_t lost) {
  on_read_batch_end(link);  // events read before the close (e.g. in the bye's read) still count
  lost_ += lost;
  std::optional<RemoteEvent> left;
  std::optional<std::size_t> redial;
  std::string redial_why;
  {
    std::lock_guard lock(mutex_);
    std::erase(links_, link);
    if (link->established) {
      const std::int64_t node = link->hello()->node_id;
      if (auto it = joined_.find(node); it != joined_.end() && it->second.link == link) {
        joined_.erase(it);
        const std::string why = leave_reason(reason);
        left = notice(events::peer_left, *link->hello(), why, lost);
        if (lost > 0 || why != "bye") {
          DITASK_LOG(warn, "mesh") << link->peer() << " left (" << reason << "); " << lost
                                   << " events sent to it were not acknowledged";
        } else {
          DITASK_LOG(info, "mesh") << link->peer() << " left (bye)";
        }
      }
    }
    for (std::size_t i = 0; i < dests_.size(); ++i) {
      Dest& d = dests_[i];
      if (d.link == link) {
        d.link = nullptr;
      }
      // After an orderly bye the peer is done: dialling it again would only reach its
      // launcher's listening socket. A failed peer may be restarted (--auto-recover).
      if (d.dial && link->dialled() && d.address == link->dial_address && !stopping_ && !d.link &&
          reason != "bye") {
        if (!link->established && d.last_error.empty()) {
          d.last_error = reason;
        }
        redial = i;
        redial_why = d.last_error.empty() ? reason : d.last_error;
      }
    }
    if (refused_locked()) {
      ready_changed_.notify_all();
    }
    if (links_.empty()) {
      links_changed_.notify_all();
    }
  }
  room_changed_.notify_all();
  if (left) {
    hand_over({std::move(*left)});
  }
  if (redial) {
    dial_failed(*redial, redial_why);
  }
}

void Mesh::on_acked(std::uint64_t count) { acked_ += count; }

void Mesh::on_unhandled() { ++unhandled_; }

bool Mesh::ready_locked() const {
  for (const auto& d : dests_) {
    if (d.required && !d.joined_ever) {
      return false;
    }
  }
  if (settings_.topology == "mesh" && settings_.world_size &&
      *settings_.world_size > static_cast<std::int64_t>(settings_.local_nodes.size())) {
    std::set<std::int64_t> seen;
    for (const auto& d : dests_) {
      if (d.joined_ever && d.node) {
        seen.insert(*d.node);
      }
    }
    return static_cast<std::int64_t>(seen.size()) >= *settings_.world_size - 1;
  }
  return true;
}

std::string Mesh::name_of(const Dest& d) {
  return d.node ? "node " + std::to_string(*d.node) + " (" + d.address + ")" : d.address;
}

std::vector<std::string> Mesh::missing_locked() const {
  std::vector<std::string> out;
  for (const auto& d : dests_) {
    if (!d.required || d.joined_ever) {
      continue;
    }
    std::string text = name_of(d);
    if (!d.dial) {
      text += ": it has not dialled this node";
    } else if (!d.last_error.empty()) {
      text += ": " + d.last_error;
    } else {
      text += ": no hello yet";
    }
    out.push_back(std::move(text));
  }
  if (out.empty() && settings_.world_size) {
    out.push_back("fewer than " + std::to_string(*settings_.world_size - 1) +
                  " peers (--world-size) have connected");
  }
  return out;
}

void Mesh::wait_ready() {
  const auto deadline = std::chrono::steady_clock::now() + settings_.startup_timeout;
  std::unique_lock lock(mutex_);
  if (ready_changed_.wait_until(lock, deadline, [&] { return ready_locked() || refused_locked(); }) &&
      ready_locked()) {
    return;
  }
  if (refused_locked()) {
    std::vector<std::string> refusals;
    for (const auto& d : dests_) {
      if (d.required && !d.joined_ever && !d.permanent_error.empty()) {
        refusals.push_back(name_of(d) + ": " + d.permanent_error);
      }
    }
    throw Error("mesh cannot become ready: node " + std::to_string(settings_.node_id) + " and " +
                    join(refusals, "; "),
                "give every worker of the job the same --token (or DITASK_TOKEN) and --run-id");
  }
  throw Error("mesh not ready after " + seconds_text(settings_.startup_timeout) + ": node " +
                  std::to_string(settings_.node_id) + " is still waiting for " + join(missing_locked(), "; "),
              "are those workers running and reachable? a slow start needs a longer --startup-timeout");
}

void Mesh::send(const SendTarget& target, std::string_view event, const EventArgs& args) {
  send_payload(target, event, codec::encode_event_args(args), &args);
}

void Mesh::send_packed(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload) {
  send_payload(target, event, payload, nullptr);
}

void Mesh::send_payload(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload,
                        const EventArgs* args) {
  // A spoke of a relaying star reaches another spoke through the hub, which strips the prefix.
  const std::optional<std::int64_t> hub = target.node ? relay_hub_for(*target.node) : std::nullopt;
  std::string topic;
  topic.reserve(settings_.topic_prefix.size() + event.size() + (hub ? 24 : 0));
  if (hub) {
    topic.append(kRelayPrefix).append(std::to_string(*target.node)).append("/");
  }
  topic.append(settings_.topic_prefix).append(event);
  OutgoingEvent out(topic, payload);
  const std::size_t size = out.size();
  Deadline deadline(settings_.send_timeout);
  const bool to_self = self_delivery_ && (!target.node || *target.node == settings_.node_id) && target.label.empty();
  const std::optional<std::int64_t> want = hub ? hub : target.node;
  // On the stack for the usual handful of peers: send() is emit's hot path.
  boost::container::small_vector<std::shared_ptr<Link>, 8> links;
  {
    std::unique_lock lock(mutex_);
    boost::container::small_vector<Dest*, 8> early;
    bool found = false;
    for (auto& d : dests_) {
      if (want && d.node != want) {
        continue;
      }
      if (d.link) {
        if (!target.label.empty() && !labels_match(joined_.at(*d.node).hello.labels, target.label)) {
          continue;
        }
        if (std::find(links.begin(), links.end(), d.link) == links.end()) {
          links.push_back(d.link);
        }
        found = true;
      } else if (!d.joined_ever && target.label.empty()) {
        early.push_back(&d);
        found = true;
      }
    }
    if (target.node && !found && !(to_self && *target.node == settings_.node_id)) {
      std::vector<std::string> connected;
      for (const auto& [node, j] : joined_) {
        connected.push_back(std::to_string(node));
      }
      const std::string known = join(connected);
      std::string hint = known.empty() ? "no peer is connected" : "connected peers: " + known;
      if (settings_.topology == "star" && !settings_.relay && !is_hub()) {
        hint += "; spokes of a star reach each other only through a relaying hub (--relay)";
      }
      throw Error("node " + std::to_string(*target.node) + " is not a peer of node " +
                      std::to_string(settings_.node_id),
                  hint);
    }
    for (const auto& link : links) {
      const auto limit = link->hello()->max_frame_bytes;
      if (size > limit) {
        throw Error("event '" + std::string(event) + "' is " + std::to_string(size) + " bytes, more than " +
                        link->peer() + " accepts (" + std::to_string(limit) + " bytes, its --max-frame-bytes)",
                    "send smaller events or raise --max-frame-bytes on the receiving workers");
      }
    }
    if (!early.empty() && size > settings_.max_frame_bytes) {
      throw Error("event '" + std::string(event) + "' is " + std::to_string(size) +
                      " bytes, more than --max-frame-bytes (" + std::to_string(settings_.max_frame_bytes) + ")",
                  "send smaller events or raise --max-frame-bytes");
    }
    for (Dest* d : early) {
      // Before a peer's first hello its events wait here, bounded like a send queue.
      const auto room = [&] { return d->joined_ever || d->early_bytes == 0 || d->early_bytes + size <= settings_.send_queue_bytes; };
      if (!room()) {
        if (settings_.drop_when_full) {
          ++dropped_;
          continue;
        }
        if (!room_changed_.wait_until(lock, deadline.at(), room)) {
          throw Error("event '" + std::string(event) + "' waited " + seconds_text(settings_.send_timeout) +
                          " for " + (d->node ? "node " + std::to_string(*d->node) : d->address) +
                          ", which has not joined yet",
                      "start the peer, or raise --send-timeout / --send-queue-bytes");
        }
      }
      if (d->joined_ever) {
        if (d->link) {
          links.push_back(d->link);
        }
        continue;
      }
      d->early.push_back(Link::Pending{out.body(), static_cast<std::uint64_t>(settings_.node_id), 0});
      d->early_bytes += size;
      ++sent_;
    }
  }
  for (const auto& link : links) {
    switch (link->send_event(out, static_cast<std::uint64_t>(settings_.node_id), 0, settings_.drop_when_full,
                             deadline)) {
      case SendResult::queued:
        ++sent_;
        break;
      case SendResult::dropped:
        if (++dropped_ % 1000 == 1) {
          DITASK_LOG(warn, "mesh") << "dropped event '" << event << "' for " << link->peer()
                                   << ": its send queue is full (" << dropped_.load() << " dropped so far)";
        }
        break;
      case SendResult::closed:
        ++lost_;
        DITASK_LOG(debug, "mesh") << "event '" << event << "' not sent: " << link->peer() << " just left";
        break;
      case SendResult::timed_out:
        throw Error("event '" + std::string(event) + "': the send queue to " + link->peer() + " stayed full for " +
                        seconds_text(settings_.send_timeout),
                    "the peer handles events slower than they are emitted; raise --send-queue-bytes or "
                    "--send-timeout, or use --send-policy drop");
    }
  }
  if (to_self) {
    RemoteEvent e;
    e.event = std::string(event);
    e.meta = own_meta_;
    if (args) {
      e.args = *args;
    } else if ((e.packed = codec::locate_event_args(payload))) {
      e.packed->bytes.assign(payload.begin(), payload.end());
    } else {
      e.args = codec::decode_event_args(payload);
    }
    hand_over({std::move(e)});
  }
}

bool Mesh::refused_locked() const {
  return std::any_of(dests_.begin(), dests_.end(),
                     [](const Dest& d) { return d.required && !d.joined_ever && !d.permanent_error.empty(); });
}

std::vector<PeerInfo> Mesh::peers() const {
  std::lock_guard lock(mutex_);
  std::vector<PeerInfo> out;
  for (const auto& [node, j] : joined_) {
    out.push_back(PeerInfo{node, j.hello.attempt, j.hello.labels, j.hello.listen});
  }
  return out;
}

TransportStats Mesh::stats() const {
  return TransportStats{sent_.load(), acked_.load(), received_.load(), lost_.load(), dropped_.load(), unhandled_.load()};
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
    if (link->established && !link->wait_acked(deadline)) {
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
    if (link->established) {
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
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& d : dests_) {
      if (d.timer) {
        d.timer->cancel();
      }
    }
  });
  work_.reset();
  io_.stop();
  thread_.join();
  if (!bound_ipc_path_.empty()) {
    ::unlink(bound_ipc_path_.c_str());
  }
}

}  // namespace ditask::detail::mesh
