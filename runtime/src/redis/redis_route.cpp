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
#include "transport/inline_write.hpp"

namespace ditask::detail::redis {

// ---- sending (any thread) ----

void RedisTransport::send_packed(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload) {
  const std::string topic = settings_.topic_prefix + std::string(event);
  OutgoingEvent out(topic, payload);
  std::size_t queued = 0;
  try {
    queued = group_.send(mutex_, changed_, [&] { return shutting_down_; }, target, out, event,
                         out.size() + kFrameHeaderBytes);
  } catch (...) {
    publish_here_or_post();  // what the channels before the one that timed out queued
    throw;
  }
  if (queued > 0) {
    publish_here_or_post();
  }
}

SendResult RedisTransport::PeerChannel::send_event(OutgoingEvent& event, std::uint64_t sender,
                                                   std::uint16_t /*flags*/, bool drop_when_full, Deadline& deadline,
                                                   bool /*write_here*/) {
  RedisTransport& t = owner_;
  const std::size_t size = event.size() + kFrameHeaderBytes;
  const auto name = event.topic().substr(t.settings_.topic_prefix.size());
  std::unique_lock lock(t.mutex_);
  // Bounded like a mesh send queue: what is on its way to Redis; what this reader has not said
  // it read (kReadWindowBytes); and what waits for it to say hello again after a reconnect
  // (--send-queue-bytes).
  Peers::Expected* e = nullptr;
  const auto live = [&] {
    e = t.peers_.find_node(node_);
    return !t.shutting_down_ && e != nullptr && e->conn == instance_;
  };
  if (!live()) {
    return SendResult::closed;
  }
  if (!t.group_.wants(e->slot.interest.names, name)) {
    return SendResult::unwanted;  // it has no handler for it (the mesh's receiver would count it)
  }
  const auto room = [&] { return !live() || (t.queue_room_locked(size) && t.reader_room(e->slot, size)); };
  if (!room() && !running_on_arrival()) {  // on arrival: room comes only through this thread
    if (drop_when_full) {
      return SendResult::dropped;
    }
    if (!t.changed_.wait_until(lock, deadline.at(), room)) {
      return SendResult::timed_out;
    }
    if (!live()) {
      return SendResult::closed;
    }
  }
  HeldEvent held{event.body(), sender, 0};
  if (e->slot.confirmed) {
    t.queue_locked(node_, instance_, e->slot, held, false);
  } else {
    e->slot.backlog.push_back(std::move(held));  // until it says hello again after a reconnect
    e->slot.backlog_bytes += size;
  }
  return SendResult::queued;
}

std::size_t RedisTransport::PeerChannel::send_held(const std::vector<HeldEvent>& events) {
  RedisTransport& t = owner_;
  auto* e = t.peers_.find_node(node_);
  std::size_t unwanted = 0;
  for (const auto& h : events) {
    if (e != nullptr && e->conn == instance_ &&
        t.group_.wants(e->slot.interest.names, std::string_view(h.body->topic).substr(t.settings_.topic_prefix.size()))) {
      t.queue_locked(node_, instance_, e->slot, h);
    } else {
      ++unwanted;
    }
  }
  return unwanted;
}

Blocked RedisTransport::PeerChannel::blocked() const {
  const RedisTransport& t = owner_;
  std::lock_guard lock(t.mutex_);
  const auto* e = t.peers_.find_node(node_);
  if (e != nullptr && e->conn == instance_ && t.queue_room_locked(0)) {
    const std::size_t unread = e->slot.confirmed ? e->slot.window.unread_bytes() : e->slot.backlog_bytes;
    return {peer(), peer() + " has not read the " + std::to_string(unread) +
                        " bytes sent to it before: is it busy in a handler? raise --send-timeout, or use "
                        "--send-policy drop"};
  }
  return {"Redis at " + t.server_.where() + (t.link_ == Link::up ? std::string() : " (not connected: " + t.last_error_ + ")"),
          "is Redis reachable? raise --send-timeout / --send-queue-bytes"};
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

void RedisTransport::queue_locked(std::int64_t node, std::uint64_t to, Slot& slot, const HeldEvent& held, bool post) {
  Outgoing out{channel_of(node), {}};
  encode_frame(out.frame, FrameKind::event, false, settings_.node_id, instance_, to, ++slot.sent_seq,
               held.body->topic, held.body->payload);
  bytes_in_flight_ += out.frame.size();
  slot.window.sent(slot.sent_seq, out.frame.size());
  outbox_.push_back(std::move(out));
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
