// SPDX-License-Identifier: MIT
// The mesh, part 4: received events and the relay, readiness, sending.
#include "mesh.hpp"

#include "make_mesh.hpp"

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
#include "../transport/inline_write.hpp"
#include "auth.hpp"
#include "refusal.hpp"
#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using generic = asio::generic::stream_protocol;


void Mesh::on_event(const std::shared_ptr<Link>& link, Frame&& frame) {
  const std::size_t bytes = frame.topic.size() + frame.body().size();
  if (!link->established()) {
    DITASK_LOG(error, "mesh") << "closing connection with " << link->peer() << ": an event before the hello";
    link->close_here("an event before the hello");
    return;
  }
  ++counters_.received;
  if (relay_plan_.hub_relays() && (frame.flags & kFlagRelayed) == 0 && frame.topic.starts_with(kRelayPrefix)) {
    if (!relay_to_one(link, frame)) {
      return;  // forwarded (or counted as dropped): not this node's event
    }
  }
  if (!frame.topic.starts_with(settings_.topic_prefix)) {
    DITASK_LOG(debug, "mesh") << "ignoring topic '" << frame.topic << "' from " << link->peer();
    link->done(frame.seq, bytes, false);
    return;
  }
  RemoteEvent& e = batch_.emplace_back();  // built in place: a read's events are moved once, to their sink
  try {
    e.packed = codec::locate_event_args(frame.body());
    if (!e.packed) {
      e.args = codec::decode_event_args(frame.body());
    }
  } catch (const std::exception& ex) {
    batch_.pop_back();  // before the close, which may hand the batch over
    DITASK_LOG(error, "mesh") << "closing connection with " << link->peer() << ": event '"
                              << frame.topic.substr(settings_.topic_prefix.size()) << "': " << ex.what();
    link->close_here("a malformed event");
    return;
  }
  if (relay_plan_.hub_relays() && (frame.flags & (kFlagRelayed | kFlagTargeted)) == 0) {
    const auto payload = frame.body();
    relay(link, std::make_shared<Body>(Body{frame.topic, {payload.begin(), payload.end()}}), frame.sender);
  }
  if (e.packed && frame.shared) {
    e.packed->shared = std::move(frame.shared);
    e.packed->shared_size = frame.shared_size;
  } else if (e.packed) {
    e.packed->bytes = std::move(frame.payload);
  }
  e.event.assign(frame.topic, settings_.topic_prefix.size());
  e.receipt = link;
  e.seq = frame.seq;
  e.bytes = bytes;
  e.meta = link->sender_meta();
  // Relayed by a star's hub: this node's own (a spoke), or the hub of another launcher's star
  // this worker is attached to. Only a relaying hub sets the flag, and every peer passed the
  // handshake (run id, token).
  if ((frame.flags & kFlagRelayed) != 0 && frame.sender != static_cast<std::uint64_t>(link->hello()->node_id)) {
    e.meta = relayed_sender(frame.sender);
    e.relayed = true;
  }
}

bool Mesh::relay_to_one(const std::shared_ptr<Link>& from, Frame& frame) {
  // "relay.<node>/task.<event>": a spoke's emit_to_node for another spoke.
  const std::size_t bytes = frame.topic.size() + frame.body().size();  // what the link counted in
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
  if (frame.shared) {
    const auto payload = frame.body();
    frame.payload.assign(payload.begin(), payload.end());
  }
  auto body = std::make_shared<Body>(Body{frame.topic, std::move(frame.payload)});
  std::optional<std::shared_ptr<Link>> to;
  {
    std::lock_guard lock(mutex_);
    to = group_.relay_one_locked(
        node, [&] { return HeldEvent{body, frame.sender, kFlagRelayed}; }, body->size());
  }
  if (to) {
    forward_relayed(*to, body, frame.sender);
  }
  from->done(frame.seq, bytes, true);  // the hub's part is done: forwarded, held, or counted as dropped
  return false;
}

void Mesh::relay(const std::shared_ptr<Link>& from, const BodyPtr& body, std::uint64_t sender) {
  boost::container::small_vector<std::shared_ptr<Link>, 8> to;
  {
    std::lock_guard lock(mutex_);
    // A spoke that has not joined yet gets it after its hello, like any event emitted early.
    to = group_.relay_route_locked(
        from, static_cast<std::int64_t>(sender), [&] { return HeldEvent{body, sender, kFlagRelayed}; },
        body->size());
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
                                : to->send_event(out, sender, kFlagRelayed, true, now, false);
  switch (result) {
    case SendResult::queued:
      ++counters_.sent;
      return;
    case SendResult::closed:
      ++counters_.lost;  // as for a direct send: the spoke was just leaving
      return;
    default:
      relay_dropped(to->peer(), "its send queue is full or the event too large");
  }
}

void Mesh::relay_dropped(const std::string& whom, const char* why) {
  group_.count_dropped("(relayed)", whom, why);  // counted always, logged the first time and then every 1000th
}

void Mesh::on_read_batch_end(const std::shared_ptr<Link>& /*link*/) {
  // One link reads at a time: the batch holds its events (and, when a frame of it closed
  // another link, that link's events are handed over with it, still in order per link).
  if (batch_.empty()) {
    return;
  }
  hand_over(std::move(batch_));  // the sink moves the events out; the vector keeps its capacity
  batch_.clear();
}

void Mesh::wait_ready() {
  std::unique_lock lock(mutex_);
  if (group_.wait_ready(lock, ready_changed_, [] { return true; }, [] { return false; })) {
    return;
  }
  if (peers_.refused()) {
    throw group_.refused_error();
  }
  throw group_.not_ready_error(
      [](const Dest& d) {
        return !d.slot.dial                ? std::string("it has not dialled this node")
               : !d.slot.last_error.empty() ? d.slot.last_error
                                            : std::string("no hello yet");
      },
      "", "are those workers running and reachable? a slow start needs a longer --startup-timeout");
}

void Mesh::send(const SendTarget& target, std::string_view event, const EventArgs& args) {
  send_payload(target, event, codec::encode_event_args(args), &args);
}

void Mesh::send_packed(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload) {
  send_payload(target, event, payload, nullptr);
}

void Mesh::send_owned(const SendTarget& target, std::string_view event, std::vector<std::uint8_t>&& payload) {
  send_payload(target, event, payload, nullptr, &payload);
}

void Mesh::send_payload(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload,
                        const EventArgs* args, std::vector<std::uint8_t>* owned) {
  // A spoke of a relaying star reaches another spoke through the hub, which strips the prefix.
  const std::optional<std::int64_t> hub = target.node ? relay_hub_for(*target.node) : std::nullopt;
  std::string topic;
  topic.reserve(settings_.topic_prefix.size() + event.size() + (hub ? 24 : 0));
  if (hub) {
    topic.append(kRelayPrefix).append(std::to_string(*target.node)).append("/");
  }
  topic.append(settings_.topic_prefix).append(event);
  OutgoingEvent out(topic, payload, owned);
  const std::size_t size = out.size();
  Deadline deadline(settings_.send_timeout);
  const bool to_self = self_delivery_ && (!target.node || *target.node == settings_.node_id) && target.label.empty();
  // For chosen peers only: a relaying hub must not pass it on (one for another spoke carries the
  // relay prefix, which the hub reads first).
  const std::uint16_t flags = target.node || !target.label.empty() ? kFlagTargeted : 0;
  const std::optional<std::int64_t> want = hub ? hub : target.node;
  // On the stack for the usual handful of peers: send() is emit's hot path.
  // Raw pointers: `routes` (the fast path) keeps them alive; the locked path's channels own theirs.
  boost::container::small_vector<Link*, 8> links;
  std::shared_ptr<const Routes> routes;
  Group::Channels channels;
  if (route_fast(target, want, routes, links)) {
    Group::check_frame_limits(links, event, size);
  } else {
    std::unique_lock lock(mutex_);
    // Before a peer's first hello its events wait here, bounded like a send queue.
    channels = group_.route_and_hold_locked(
        lock, room_changed_, target, want, to_self, target.node ? relay_plan_.unreachable_hint(*target.node) : "",
        event, size, [&] { return HeldEvent{out.body(), static_cast<std::uint64_t>(settings_.node_id), flags}; },
        deadline);
  }
  // A reply (a handler's first emit) or an emit right after a wait is written by this thread
  // when the link is idle; the io thread batches the rest.
  const bool write_here = (!links.empty() || !channels.empty()) && take_inline_write();
  const auto sender = static_cast<std::uint64_t>(settings_.node_id);
  // To one node (or the hub on its way): a link that closed meanwhile is an error, as an away peer.
  const std::int64_t to_node = target.node && *target.node != settings_.node_id ? *target.node : -1;
  if (channels.empty()) {
    group_.send_on(links, out, event, sender, flags, deadline, write_here, to_node);
  } else {
    group_.send_on(channels, out, event, sender, flags, deadline, write_here, to_node);
  }
  if (to_self) {
    RemoteEvent e;
    e.event = std::string(event);
    e.meta = own_meta_;
    if (args) {
      e.args = *args;
    } else if ((e.packed = codec::locate_event_args(out.payload()))) {
      e.packed->bytes.assign(out.payload().begin(), out.payload().end());
    } else {
      e.args = codec::decode_event_args(out.payload());
    }
    hand_over({std::move(e)});
  }
}

void Mesh::publish_routes_locked() {
  auto routes = std::make_shared<Routes>();
  for (const auto& [node, j] : peers_.joined()) {
    routes->peers.push_back(Routes::Peer{node, j.conn, j.record.labels});
  }
  routes->early_pending = peers_.any_not_joined();
  std::shared_ptr<const Routes> swapped = std::move(routes);
  {
    std::lock_guard lock(routes_mutex_);
    routes_.swap(swapped);
  }  // `swapped` now holds the replaced table: released here, after the lock
}

bool Mesh::route_fast(const SendTarget& target, std::optional<std::int64_t> want,
                      std::shared_ptr<const Routes>& routes, boost::container::small_vector<Link*, 8>& links) const {
  {
    std::lock_guard lock(routes_mutex_);
    routes = routes_;
  }
  if (!routes || routes->early_pending) {
    return false;
  }
  for (const auto& peer : routes->peers) {
    if ((want && peer.node != *want) || (!target.label.empty() && !labels_match(peer.labels, target.label))) {
      continue;
    }
    links.push_back(peer.link.get());
  }
  return !(target.node && links.empty());  // not a joined peer: the locked path tells why
}

}  // namespace ditask::detail::mesh
