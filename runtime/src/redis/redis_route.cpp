// SPDX-License-Identifier: MIT
// The Redis transport's sending side: routing an emit to its peers' channels (held for a peer
// that has not said hello yet) and publishing them in order. Receiving is redis_receive.cpp.
// docs/redis.md.
// At -O2 and above GCC 12 sees a null dereference in Asio's own executor comparison inlined
// into the hiredis hooks: a false positive (as for tests/bench/raw_mesh_bench.cpp).
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <boost/asio/post.hpp>

#include "../codec/envelope.hpp"
#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "redis_transport.hpp"

namespace ditask::detail::redis {

// ---- sending (any thread) ----

void RedisTransport::send(const SendTarget& target, std::string_view event, const EventArgs& args) {
  const auto payload = codec::encode_event_args(args);
  send_payload(target, event, payload);
}

void RedisTransport::send_packed(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload) {
  send_payload(target, event, payload);
}

void RedisTransport::send_payload(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload) {
  Held held{settings_.topic_prefix + std::string(event), nullptr};
  const std::size_t size = held.topic.size() + payload.size() + kFrameHeaderBytes;
  if (size > settings_.max_frame_bytes) {
    throw Error("event '" + std::string(event) + "' is " + std::to_string(size) +
                    " bytes, more than --max-frame-bytes (" + std::to_string(settings_.max_frame_bytes) + ")",
                "send smaller events or raise --max-frame-bytes");
  }
  held.payload = std::make_shared<const std::vector<std::uint8_t>>(payload.begin(), payload.end());
  std::unique_lock lock(mutex_);
  if (shutting_down_) {
    return;
  }
  std::vector<Peers::Expected*> joined, early;
  bool found = false;
  for (auto& e : peers_.expected()) {
    if (target.node && e.node != target.node) {
      continue;
    }
    if (e.conn != 0) {
      const auto* j = peers_.joined(*e.node);
      if (!target.label.empty() && (j == nullptr || !labels_match(j->record.labels, target.label))) {
        continue;
      }
      joined.push_back(&e);
      found = true;
    } else if (!e.joined_ever && target.label.empty()) {
      early.push_back(&e);
      found = true;
    }
  }
  if (target.node && !found) {
    std::string known;
    for (const auto& [node, j] : peers_.joined()) {
      known += (known.empty() ? "" : ", ") + std::to_string(node);
    }
    throw mesh::not_a_peer(settings_, *target.node, known.empty() ? "no peer is connected" : "connected peers: " + known);
  }
  // Bounded like a mesh send queue: what is on its way to Redis; and per receiver, what it has
  // not said it read (kReadWindowBytes).
  const std::size_t want = size * (joined.size() + early.size());
  auto queue_room = [&] { return bytes_in_flight_ == 0 || bytes_in_flight_ + want <= settings_.send_queue_bytes; };
  auto slow_reader = [&]() -> const Peers::Expected* {
    for (const auto* e : joined) {
      if (e->conn != 0 && e->slot.confirmed && !e->slot.window.has_room(size, kReadWindowBytes) &&
          wants(e->slot.interest.names, event)) {
        return e;
      }
    }
    return nullptr;
  };
  auto room = [&] { return shutting_down_ || (queue_room() && slow_reader() == nullptr); };
  if (!room()) {
    if (settings_.drop_when_full) {
      counters_.dropped += joined.size() + early.size();
      return;
    }
    if (!changed_.wait_for(lock, settings_.send_timeout, room)) {
      if (const auto* e = slow_reader(); e != nullptr && queue_room()) {
        throw Error("event '" + std::string(event) + "' waited " + std::to_string(settings_.send_timeout.count()) +
                        " ms for node " + std::to_string(*e->node) + " to read the " +
                        std::to_string(e->slot.window.unread_bytes()) + " bytes sent to it before",
                    "is node " + std::to_string(*e->node) + " busy in a handler? raise --send-timeout");
      }
      throw Error("event '" + std::string(event) + "' waited " + std::to_string(settings_.send_timeout.count()) +
                      " ms for room in the queue to Redis at " + server_.where() +
                      (link_ == Link::up ? std::string() : " (not connected: " + last_error_ + ")"),
                  "is Redis reachable? raise --send-timeout / --send-queue-bytes");
    }
  }
  bool queued = false;
  for (auto* e : joined) {
    if (!wants(e->slot.interest.names, event)) {
      ++counters_.unhandled;  // it has no handler for it: not sent (the mesh's receiver would count it)
      continue;
    }
    if (e->slot.confirmed) {
      queue_locked(*e->node, e->conn, e->slot, held, false);
      queued = true;
    } else if (e->slot.backlog_bytes + size <= settings_.send_queue_bytes || e->slot.backlog.empty()) {
      e->slot.backlog.push_back(held);  // until it said hello again after a reconnect
      e->slot.backlog_bytes += size;
      ++counters_.sent;
    } else {
      ++counters_.dropped;
    }
  }
  for (auto* e : early) {
    if (peers_.hold(*e, held, size, settings_.send_queue_bytes)) {
      ++counters_.sent;
    } else {
      ++counters_.dropped;
    }
  }
  lock.unlock();
  if (queued) {
    publish_here_or_post();
  }
}

void RedisTransport::publish_here_or_post() {
  // A reply from a handler, or an emit right after a wait, goes out on this thread: no io-thread
  // wake-up on its way to Redis. Never waits for the io thread: when it holds the client, it
  // publishes instead.
  std::unique_lock guard(pub_guard_, std::try_to_lock);
  if (guard.owns_lock()) {
    bool up = false;
    {
      std::lock_guard lock(mutex_);
      up = link_ == Link::up;
    }
    if (up && pub_) {
      publish_outbox_at_once();
    }
    return;
  }
  std::lock_guard lock(mutex_);
  post_flush_locked();
}

void RedisTransport::queue_locked(std::int64_t node, std::uint64_t to, Slot& slot, const Held& held, bool post) {
  Outgoing out{channel_of(node), {}};
  encode_frame(out.frame, FrameKind::event, false, settings_.node_id, instance_, to, ++slot.sent_seq, held.topic,
               *held.payload);
  bytes_in_flight_ += out.frame.size();
  slot.window.sent(slot.sent_seq, out.frame.size());
  outbox_.push_back(std::move(out));
  ++counters_.sent;
  if (post) {
    post_flush_locked();
  }
}

void RedisTransport::post_flush_locked() {
  if (!flush_posted_ && link_ == Link::up) {
    flush_posted_ = true;
    boost::asio::post(io_, [this] { flush(); });
  }
}

// ---- publishing (io thread) ----

void RedisTransport::flush() {
  const std::lock_guard guard(pub_guard_);
  {
    std::lock_guard lock(mutex_);
    flush_posted_ = false;
    if (link_ != Link::up) {
      return;  // kept in order for the reconnect
    }
  }
  publish_outbox_at_once();  // written here, in one go, not by one more turn of the io thread
}

void RedisTransport::publish_outbox_at_once() {
  pub_->hold_writes();
  publish_outbox();
  pub_->write_held();
}

void RedisTransport::queue_control_locked(Outgoing&& out) {
  bytes_in_flight_ += out.frame.size();
  outbox_.push_back(std::move(out));
}

void RedisTransport::publish_outbox() {
  std::vector<Outgoing> out;
  {
    std::lock_guard lock(mutex_);
    out.swap(outbox_);
  }
  for (auto& o : out) {
    publish_now(std::move(o), true);
  }
}

void RedisTransport::publish_now(Outgoing&& out, bool counted) {
  const std::size_t bytes = counted ? out.frame.size() : 0;
  const std::string_view frame(reinterpret_cast<const char*>(out.frame.data()), out.frame.size());
  const char* verb = out.kind == Outgoing::Kind::presence ? "SET" : "PUBLISH";
  if (!pub_ || !pub_->command_raw(&RedisTransport::on_published, reinterpret_cast<void*>(bytes), verb, out.channel,
                                  frame)) {
    // The connection ended: an event's fate is settled by its number (the receiver finds the
    // gap after the reconnect's sync, or the sender counts it when the receiver leaves).
    std::lock_guard lock(mutex_);
    bytes_in_flight_ -= bytes;
  }
}

bool RedisTransport::wants(const std::optional<std::set<std::string>>& interest, std::string_view name) {
  return !interest || name.starts_with("ditask.") || name == events::finish || interest->count(std::string(name)) != 0;
}

void RedisTransport::on_published(redisAsyncContext* ctx, void* /*reply*/, void* privdata) {
  // Whether Redis had a subscriber for it says nothing of what the receiver's task did with it:
  // its read notice (acked) or its leave (lost) settles each event (on_read_notice, leave).
  auto* client = static_cast<RedisClient*>(ctx->data);
  if (client == nullptr) {
    return;
  }
  auto* self = static_cast<RedisTransport*>(client->owner());
  {
    std::lock_guard lock(self->mutex_);
    self->bytes_in_flight_ -= reinterpret_cast<std::size_t>(privdata);
  }
  self->changed_.notify_all();
}

}  // namespace ditask::detail::redis
