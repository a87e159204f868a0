// SPDX-License-Identifier: MIT
// The mesh, part 3: the handshake's answers, refusals, accepting and joining a peer,
// membership notices and senders, a link's close.
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
#include "auth.hpp"
#include "refusal.hpp"
#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using generic = asio::generic::stream_protocol;

namespace {

constexpr std::chrono::milliseconds kRefuseLinger{1000};

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

// Both sides of a pair may refuse each other at once (a token on one side only): keep both reasons.
void add_reason(std::string& reasons, const std::string& reason) {
  if (reasons.find(reason) == std::string::npos) {
    reasons += (reasons.empty() ? "" : "; ") + reason;
  }
}

}  // namespace

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
      if (link->handshake().welcomed()) {
        establish(link);
      }
      return;
    case FrameType::bye: {
      const Bye bye = decode_bye(frame.payload);
      const std::string& reason = bye.reason;
      if (!link->established()) {
        // The refusal in our own words, as the refusing peer worded it for us.
        const std::string why = printable(bye.you.empty() ? reason : bye.you, 1024);
        if (first_time("refused by " + link->peer() + why)) {
          DITASK_LOG(error, "mesh") << link->peer() << " refused us: " << why;
        }
        if (link->dialled()) {
          std::lock_guard lock(mutex_);
          for (auto& d : peers_.expected()) {
            if (d.slot.dial && d.address == link->dial_address()) {
              d.slot.last_error = "it refused us: " + why;
              if (bye.permanent) {
                add_reason(d.permanent_error, d.slot.last_error);
              }
            }
          }
        }
        if (!link->handshake().refused()) {
          link->close_here("refused by the peer: " + why);
        }  // else we refused it too: our bye is queued, and the leave closes the link once it is out
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
  return group_.first_time_locked(what);
}

void Mesh::refuse(const std::shared_ptr<Link>& link, const Refusal& why, std::optional<std::int64_t> node) {
  // A dialler retries: say it once at error level, the repeats at debug level.
  if (first_time("refused " + link->peer() + why.ours)) {
    DITASK_LOG(error, "mesh") << "refused " << link->peer() << ": " << why.ours;
  } else {
    DITASK_LOG(debug, "mesh") << "refused " << link->peer() << " again: " << why.ours;
  }
  link->handshake().mark_refused();
  link->stop_hello_timer();
  if (!node && link->hello()) {
    node = link->hello()->node_id;
  }
  if (why.fails_both) {
    // The job is misconfigured (another --world-size): this node's start fails too, naming it.
    std::lock_guard lock(mutex_);
    peers_.fail_job(link->peer() + ": we refused it: " + why.ours);
  }
  if (why.permanent && node) {
    // An expected peer that can never join: a start() waiting for it fails now, not at the timeout.
    std::lock_guard lock(mutex_);
    for (auto& d : peers_.expected()) {
      if (d.required && !d.joined_ever && d.node == node) {
        add_reason(d.permanent_error, "we refused it: " + why.ours);
      }
    }
  }
  ready_changed_.notify_all();
  // Now, not posted: the peer's bye and end of stream may be next in this very read, and the
  // link would close before our bye (the peer's reason for us) went out.
  link->leave_here(why.ours, "refused", kRefuseLinger, why.permanent, why.theirs);
}

void Mesh::on_hello(const std::shared_ptr<Link>& link, const Frame& frame) {
  follow(link, link->handshake().on_hello(identity_, frame.payload));
}

void Mesh::on_auth(const std::shared_ptr<Link>& link, const Frame& frame) {
  follow(link, link->handshake().on_auth(identity_, frame.payload));
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
    if (const auto* j = peers_.duplicate_of(record_of(h))) {
      refused = refusal::duplicate_node(h.node_id, j->record.attempt, j->record.listen);
    }
    for (const auto& other : links_) {
      const auto& theirs = other->hello();
      if (!refused && other != link && other->handshake().has_accepted() && !other->established() && theirs &&
          theirs->node_id == h.node_id && theirs->instance != h.instance && h.attempt <= theirs->attempt) {
        refused = refusal::duplicate_node(h.node_id, theirs->attempt, theirs->listen);
      }
    }
  }
  if (refused) {
    refuse(link, *refused, h.node_id);
    return;
  }
  const bool now = link->handshake().accepted();
  link->send_control(FrameType::welcome, nullptr);
  if (now) {
    establish(link);
  }
}

void Mesh::establish(const std::shared_ptr<Link>& link) {
  const Hello& h = *link->hello();
  std::shared_ptr<Link> old;
  std::optional<Refusal> refused;
  {
    std::lock_guard lock(mutex_);
    if (const auto* j = peers_.joined(h.node_id)) {
      old = j->conn;
      const PeerRecord& was = j->record;
      if (was.instance == h.instance) {
        // Both sides dialled: keep the link dialled by the higher node id, on both sides alike.
        const auto dialer = [&](const Link& l) { return l.dialled() ? settings_.node_id : h.node_id; };
        if (dialer(*link) <= dialer(*old)) {
          DITASK_LOG(debug, "mesh") << "closing a second link with " << link->peer();
          link->handshake().mark_refused();
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
  link->establish(meta_of(h));
  {
    std::lock_guard lock(mutex_);
    auto joined = peers_.join(record_of(h), link, link->dial_address());
    joined.expected->slot.backoff = std::chrono::milliseconds(0);
    joined.expected->slot.last_error.clear();
    group_.release_held_locked(joined, *link);  // what was emitted (or relayed) before it ever joined
    publish_routes_locked();
    if (peers_.ready()) {
      ready_changed_.notify_all();
    }
  }
  room_changed_.notify_all();
  DITASK_LOG(info, "mesh") << link->peer() << " joined (attempt " << h.attempt << ")";
  hand_over({peer_joined_notice(record_of(h))});
}

PeerRecord Mesh::record_of(const Hello& hello) {
  return PeerRecord{hello.node_id, hello.attempt, hello.instance, hello.labels, hello.listen};
}

std::shared_ptr<const EventMeta> Mesh::meta_of(const Hello& hello) { return sender_meta(record_of(hello), "mesh"); }

std::shared_ptr<const EventMeta> Mesh::relayed_sender(std::uint64_t node) const {
  {
    std::lock_guard lock(mutex_);
    if (const auto* j = peers_.joined(static_cast<std::int64_t>(node)); j != nullptr && j->conn->sender_meta()) {
      return j->conn->sender_meta();
    }
  }
  // A spoke of a relaying star knows the other spokes only by the node id in the frame.
  auto meta = std::make_shared<EventMeta>();
  meta->sender = static_cast<std::int64_t>(node);
  meta->attempt = -1;
  meta->transport = "mesh";
  meta->remote = true;
  return meta;
}

void Mesh::on_closed(const std::shared_ptr<Link>& link, const std::string& reason, std::uint64_t lost) {
  on_read_batch_end(link);  // events read before the close (e.g. in the bye's read) still count
  std::optional<RemoteEvent> left;
  std::optional<std::size_t> redial;
  std::string redial_why;
  {
    std::lock_guard lock(mutex_);
    if (counts_final_) {
      lost = 0;  // this worker is dying and its counters were written: the log says what they say
    }
    counters_.lost += lost;
    std::erase(links_, link);
    const auto node = link->established() ? std::optional(link->hello()->node_id) : std::nullopt;
    if (auto gone = peers_.leave(node, link)) {
      const std::string why = leave_reason(reason);
      left = peer_left_notice(*gone, why, lost);
      if (lost > 0 || why != "bye") {
        DITASK_LOG(warn, "mesh") << link->peer() << " left (" << reason << "); " << lost
                                 << " events sent to it were not acknowledged";
      } else {
        DITASK_LOG(info, "mesh") << link->peer() << " left (bye)";
      }
    }
    auto& dests = peers_.expected();
    for (std::size_t i = 0; i < dests.size(); ++i) {
      Dest& d = dests[i];
      // After an orderly bye the peer is done: dialling it again would only reach its
      // launcher's listening socket. A failed peer may be restarted (--auto-recover).
      if (d.slot.dial && link->dialled() && d.address == link->dial_address() && !stopping_ && !d.conn &&
          reason != "bye") {
        if (!link->established() && d.slot.last_error.empty()) {
          d.slot.last_error = reason;
        }
        redial = i;
        redial_why = d.slot.last_error.empty() ? reason : d.slot.last_error;
      }
    }
    publish_routes_locked();
    if (peers_.refused()) {
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

}  // namespace ditask::detail::mesh
