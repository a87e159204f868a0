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
    throw frame_too_large(event, size, settings_.max_frame_bytes);
  }
  held.payload = std::make_shared<const std::vector<std::uint8_t>>(payload.begin(), payload.end());
  const auto deadline = std::chrono::steady_clock::now() + settings_.send_timeout;
  std::unique_lock lock(mutex_);
  if (shutting_down_) {
    return;
  }
  auto route = group_.route_locked(target, target.node, false);
  auto& joined = route.joined;
  // Bounded like a mesh send queue: what is on its way to Redis; per receiver, what it has not
  // said it read (kReadWindowBytes); and what waits for a receiver to say hello again after a
  // reconnect (--send-queue-bytes). The one --send-policy rule: drop counts, wait waits.
  const std::size_t want = size * (joined.size() + route.early.size());
  auto queue_room = [&] { return bytes_in_flight_ == 0 || bytes_in_flight_ + want <= settings_.send_queue_bytes; };
  auto backlog_room = [&](const Peers::Expected& e) {
    return e.slot.backlog.empty() || e.slot.backlog_bytes + size <= settings_.send_queue_bytes;
  };
  auto slow_reader = [&]() -> const Peers::Expected* {
    for (const auto* e : joined) {
      if (e->conn != 0 && group_.wants(e->slot.interest.names, event) &&
          (e->slot.confirmed ? !e->slot.window.has_room(size, kReadWindowBytes) : !backlog_room(*e))) {
        return e;
      }
    }
    return nullptr;
  };
  auto room = [&] { return shutting_down_ || (queue_room() && slow_reader() == nullptr); };
  if (!room()) {
    if (settings_.drop_when_full) {
      const std::string whom = "Redis at " + server_.where();
      for (std::size_t i = 0; i < joined.size() + route.early.size(); ++i) {
        group_.count_dropped(event, whom, "the queue to it or a reader's window is full");
      }
      return;
    }
    if (!changed_.wait_until(lock, deadline, room)) {
      if (const auto* e = slow_reader(); e != nullptr && queue_room()) {
        const std::string whom = "node " + std::to_string(*e->node);
        throw group_.send_timed_out(
            event, whom,
            whom + " has not read the " +
                std::to_string(e->slot.confirmed ? e->slot.window.unread_bytes() : e->slot.backlog_bytes) +
                " bytes sent to it before: is it busy in a handler? raise --send-timeout, or use --send-policy drop");
      }
      throw group_.send_timed_out(event, "Redis at " + server_.where() +
                                             (link_ == Link::up ? std::string() : " (not connected: " + last_error_ + ")"),
                                  "is Redis reachable? raise --send-timeout / --send-queue-bytes");
    }
    if (shutting_down_) {
      return;
    }
  }
  bool queued = false;
  auto send_to = [&](Peers::Expected& e) {
    if (!group_.wants(e.slot.interest.names, event)) {
      ++counters_.unhandled;  // it has no handler for it: not sent (the mesh's receiver would count it)
      return;
    }
    if (e.slot.confirmed) {
      queue_locked(*e.node, e.conn, e.slot, held, false);
      queued = true;
    } else {
      e.slot.backlog.push_back(held);  // until it said hello again after a reconnect (room() held: it fits)
      e.slot.backlog_bytes += size;
      ++counters_.sent;
    }
  };
  for (auto* e : joined) {
    send_to(*e);
  }
  for (auto* e : route.early) {
    if (group_.hold_locked(lock, changed_, *e, held, size, event, deadline) == Group::Hold::joined && e->conn != 0 &&
        !shutting_down_) {
      send_to(*e);
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
