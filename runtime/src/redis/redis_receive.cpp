// SPDX-License-Identifier: MIT
// The Redis transport's receiving side: hellos, interest notices and leaves on the control
// channel, and what comes on this node's channel, with each sender's numbers checked, handed to
// the task in batches. Sending is redis_route.cpp. docs/redis.md.
// At -O2 and above GCC 12 sees a null dereference in Asio's own executor comparison inlined
// into the hiredis hooks: a false positive (as for tests/bench/raw_mesh_bench.cpp).
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <boost/asio/post.hpp>

#include "../codec/envelope.hpp"
#include "../transport/node_settings.hpp"
#include "ditask/runtime/log.hpp"
#include "redis_transport.hpp"

namespace ditask::detail::redis {

namespace {

constexpr std::size_t kEarlyKept = 4096;  // events of a sender not known yet, kept until its hello
// How soon the read notices go after the task finished events (the sender's acked, its window).
constexpr auto kNoticeDelay = std::chrono::milliseconds(10);

std::string text_of(const redisReply* r) { return r != nullptr && r->str != nullptr ? std::string(r->str, r->len) : ""; }

}  // namespace

// ---- receiving (io thread) ----

void RedisTransport::on_control(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
    return;
  }
  const std::string kind = text_of(r->element[0]);
  if (kind == "subscribe") {
    subscribed_one();
  } else if (kind == "message") {
    on_hello_text(std::string_view(r->element[2]->str, r->element[2]->len), true);
  }
}

void RedisTransport::on_hello_text(std::string_view text, bool answer) {
  PresenceMessage m;
  try {
    m = parse_presence(text);
  } catch (const std::exception& e) {
    DITASK_LOG(warn, "redis") << "ignoring a malformed message on " << control_channel_ << ": " << e.what();
    return;
  }
  if (m.notice) {
    on_interest(m.peer.node, m.peer.instance, std::move(m.interest));
  } else {
    on_hello(m.peer, std::move(m.interest), answer);
  }
}

void RedisTransport::queue_answer_locked(const PeerRecord& peer) {
  const std::string hello = hello_text_locked();
  Outgoing out{channel_of(peer.node), {}, Outgoing::Kind::control};
  encode_frame(out.frame, FrameKind::hello, false, settings_.node_id, instance_, peer.instance, 0, {},
               std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(hello.data()), hello.size()));
  queue_control_locked(std::move(out));
}

void RedisTransport::on_interest(std::int64_t node, std::uint64_t instance, PeerInterest interest) {
  std::lock_guard lock(mutex_);
  if (auto* e = peers_.find_node(node); e != nullptr && e->conn == instance) {
    e->slot.interest.offer(interest.version, std::move(interest.names));
    return;
  }
  // Not joined here yet: the notice came before the hello (or the answer) that makes it join.
  // Kept for the join.
  auto& kept = early_interest_[node];
  if (kept.first != instance) {
    kept = {instance, PeerInterest{}};
  }
  kept.second.offer(interest.version, std::move(interest.names));
}

void RedisTransport::on_hello(const PeerRecord& peer, PeerInterest interest, bool answer) {
  if (const auto own = own_world_size(); own > 0 && peer.world_size > 0 && peer.world_size != own) {
    // Same run id, another job size: the peer is never joined, and is told (on its channel,
    // addressed to its process). A hello is a live process's (heard now, or its answer), so
    // the job is misconfigured: this node's start fails as well, whichever side heard first.
    const std::string why = "node " + std::to_string(peer.node) + " (attempt " + std::to_string(peer.attempt) +
                            ") belongs to a job of " + std::to_string(peer.world_size) +
                            " workers (--world-size), this node to one of " + std::to_string(own);
    if (!first_time("world " + std::to_string(peer.instance))) {
      return;
    }
    DITASK_LOG(error, "redis") << "refusing node " << peer.node << ": " << why;
    // The peer hears it on its own channel, even if it never heard this node's hello.
    const std::string theirs = "node " + std::to_string(settings_.node_id) + " (attempt " +
                               std::to_string(settings_.attempt) + ") belongs to a job of " + std::to_string(own) +
                               " workers (--world-size), this node to one of " + std::to_string(peer.world_size);
    Outgoing refusal{channel_of(peer.node), {}, Outgoing::Kind::control};
    encode_frame(refusal.frame, FrameKind::refuse, false, settings_.node_id, instance_, peer.instance, 0, {},
                 std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(theirs.data()), theirs.size()));
    {
      std::lock_guard lock(mutex_);
      queue_control_locked(std::move(refusal));
      post_flush_locked();
      peers_.fail_job(why);
    }
    changed_.notify_all();
    return;
  }
  if (peer.node == settings_.node_id) {
    if (peer.instance != instance_ && first_time("self " + std::to_string(peer.instance))) {
      DITASK_LOG(error, "redis") << "another process says it is node " << peer.node << " (attempt " << peer.attempt
                                 << ") in this run: give every worker its own node id";
    }
    return;
  }
  std::optional<std::uint64_t> replaced;
  {
    std::unique_lock lock(mutex_);
    if (const auto* j = peers_.joined(peer.node)) {
      if (j->record.instance == peer.instance) {
        auto* e = peers_.find_node(peer.node);
        if (e == nullptr) {
          return;
        }
        // An older hello (an answer sent before the peer's last change) may come after that
        // change's notice: the newest change wins.
        e->slot.interest.offer(interest.version, std::move(interest.names));
        if (answer) {
          // Said again: it reconnected (its own connection may have dropped alone). It hears
          // this node again, and how many events were sent to it (the sync): what its
          // subscription missed meanwhile is counted, not left for the next event to show.
          queue_answer_locked(peer);
        }
        if (!e->slot.confirmed || answer) {
          e->slot.confirmed = true;  // back after a reconnect: what waited for it goes now
          Outgoing sync{channel_of(peer.node), {}, Outgoing::Kind::control};
          encode_frame(sync.frame, FrameKind::sync, false, settings_.node_id, instance_, peer.instance,
                       e->slot.sent_seq, {}, {});
          queue_control_locked(std::move(sync));
          flush_backlog_locked(peer.node, peer.instance, e->slot);
          post_flush_locked();
        }
        return;
      }
      if (peers_.duplicate_of(peer) != nullptr) {
        lock.unlock();
        if (first_time("dup " + std::to_string(peer.instance))) {
          DITASK_LOG(error, "redis") << "refusing a second process as node " << peer.node << " (attempt "
                                     << peer.attempt << "): node " << peer.node << " has joined already";
        }
        return;
      }
      replaced = j->record.instance;  // a restart: the old process is gone
    }
  }
  if (replaced) {
    leave(peer.node, *replaced, "connection lost");
  }
  {
    std::lock_guard lock(mutex_);
    auto join = peers_.join(peer, peer.instance, "");
    if (answer) {
      queue_answer_locked(peer);  // before anything else this node sends it
      post_flush_locked();
    }
    Slot& slot = join.expected->slot;
    slot.sent_seq = 0;  // a new process counts from 1
    slot.window.clear();
    slot.confirmed = true;
    slot.backlog.clear();
    slot.backlog_bytes = 0;
    slot.interest = std::move(interest);
    if (auto kept = early_interest_.find(peer.node); kept != early_interest_.end()) {
      if (kept->second.first == peer.instance) {
        slot.interest.offer(kept->second.second.version, std::move(kept->second.second.names));  // if newer
      }
      early_interest_.erase(kept);
    }
    slot.channel = std::make_shared<PeerChannel>(*this, peer.node, peer.instance);
    group_.release_held_locked(join, *slot.channel);
  }
  changed_.notify_all();
  const auto meta = sender_meta(peer, name());
  Incoming& in = incoming_[peer.node];
  std::vector<RemoteEvent> early;
  if (in.instance != peer.instance) {
    in = new_stream(peer.instance);
  } else {
    early = std::move(in.early);
    in.early.clear();
  }
  in.meta = meta;
  DITASK_LOG(info, "redis") << "node " << peer.node << " joined (attempt " << peer.attempt << ")";
  batch_.push_back(peer_joined_notice(peer));
  for (auto& e : early) {
    e.meta = meta;
    batch_.push_back(std::move(e));
  }
}

void RedisTransport::flush_backlog_locked(std::int64_t node, std::uint64_t to, Slot& slot) {
  auto backlog = std::move(slot.backlog);
  slot.backlog.clear();
  slot.backlog_bytes = 0;
  for (const auto& h : backlog) {
    queue_locked(node, to, slot, h);  // counted sent when it was kept
  }
}

void RedisTransport::release_early_events() {
  // Once this node is announced, a peer's answer comes before any event it sends: what came
  // from a process still unknown goes now, with what is known of its sender.
  for (auto& [node, in] : incoming_) {
    for (auto& e : in.early) {
      if (!e.meta) {
        auto meta = std::make_shared<EventMeta>();
        meta->sender = node;
        meta->transport = "redis";
        meta->remote = true;
        in.meta = meta;
      }
      e.meta = in.meta;
      batch_.push_back(std::move(e));
    }
    in.early.clear();
  }
  hand_over_batch();
}

void RedisTransport::leave(std::int64_t node, std::uint64_t instance, const std::string& reason) {
  std::optional<PeerRecord> left;
  std::uint64_t lost = 0;
  {
    std::lock_guard lock(mutex_);
    if (auto* e = peers_.find_node(node); e != nullptr && e->conn == instance) {
      // What waited for it, and what it was sent but never said it was done with, go with it
      // (as on the mesh: queued or unacknowledged when the link closed).
      lost = e->slot.backlog.size() + e->slot.window.unread_count();
      e->slot.backlog.clear();
      e->slot.backlog_bytes = 0;
      e->slot.window.clear();
    }
    left = peers_.leave(node, instance);
    counters_.lost += lost;
  }
  if (!left) {
    return;
  }
  changed_.notify_all();
  DITASK_LOG(info, "redis") << "node " << node << " left (" << reason << ")";
  batch_.push_back(peer_left_notice(*left, reason, lost));
}

void RedisTransport::on_message(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
    return;
  }
  if (text_of(r->element[0]) == "subscribe") {
    subscribed_one();
    return;
  }
  const redisReply* data = r->element[2];
  const auto bytes = std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(data->str), data->len);
  const auto frame = decode_frame(bytes);
  if (!frame || frame->sender == settings_.node_id) {
    if (!frame && first_time("malformed")) {
      DITASK_LOG(warn, "redis") << "ignoring a malformed message on " << own_channel_;
    }
    return;
  }
  if (frame->to != instance_) {
    // Meant for another process of this node id, on the same channel: events numbered for an
    // earlier incarnation (its sender counts them lost when it sees that one leave), a notice or
    // a refusal about it. Never taken for this process's own stream.
    return;
  }
  if (frame->kind == FrameKind::read) {
    on_read_notice(*frame);
    return;
  }
  if (frame->kind == FrameKind::hello) {
    on_hello_text(std::string_view(reinterpret_cast<const char*>(frame->payload.data()), frame->payload.size()), false);
    return;
  }
  if (frame->kind == FrameKind::refuse) {
    // A peer found that this process cannot be in its job: a start that waits fails with its
    // words.
    const std::string why(reinterpret_cast<const char*>(frame->payload.data()), frame->payload.size());
    {
      std::lock_guard lock(mutex_);
      peers_.fail_job(printable(why, 1024));
    }
    changed_.notify_all();
    return;
  }
  Incoming& in = incoming_[frame->sender];
  if (in.instance != frame->instance) {
    // Events of a process whose hello has not come (it comes first, unless this node missed it
    // while reconnecting): counted from its first number, kept until it is known.
    in = new_stream(frame->instance);
  }
  std::uint64_t missing = 0;
  if (frame->kind == FrameKind::event) {
    const auto outcome = in.check.on_event(frame->seq);
    missing = outcome.missing;
    if (outcome.deliver) {
      deliver(in, *frame, bytes.size());
    }
  } else {
    missing = in.check.on_sent_so_far(frame->seq);
  }
  if (missing > 0) {
    counters_.lost += missing;
    DITASK_LOG(warn, "redis") << missing << " event(s) from node " << frame->sender
                                 << " never arrived (lost while a Redis connection was down)";
  }
  if (frame->kind == FrameKind::bye) {
    leave(frame->sender, frame->instance, frame->failed ? "failed" : "bye");
  } else if (frame->kind == FrameKind::sync) {
    notices_soon(true);  // the sender waits to hear what became of what it sent before
  }
}

RedisTransport::Incoming RedisTransport::new_stream(std::uint64_t instance) {
  Incoming in;
  in.instance = instance;
  in.receipt = std::make_shared<StreamReceipt>(weak_from_this());
  return in;
}

void RedisTransport::send_notices() {
  bool queued = false;
  for (auto& [sender, in] : incoming_) {
    if (!in.receipt) {
      continue;
    }
    const auto done = in.receipt->done_up_to();
    // Once everything handed on is done, the numbers counted lost after it are settled too.
    const auto upto = done >= in.delivered ? std::max(done, in.check.last()) : done;
    if (upto <= in.reported) {
      continue;
    }
    in.reported = upto;
    Outgoing notice{channel_of(sender), {}, Outgoing::Kind::control};
    encode_frame(notice.frame, FrameKind::read, false, settings_.node_id, instance_, in.instance, upto, {}, {});
    std::lock_guard lock(mutex_);
    queue_control_locked(std::move(notice));
    queued = true;
  }
  if (queued) {
    publish_here_or_post();
  }
}

void RedisTransport::notices_soon(bool now) {
  if (now) {
    boost::asio::post(io_, [this] { send_notices(); });
    return;
  }
  if (notice_armed_.load(std::memory_order_relaxed) || notice_armed_.exchange(true)) {
    return;  // they go when the timer set already fires
  }
  boost::asio::post(io_, [this] {
    notice_timer_.expires_after(kNoticeDelay);
    notice_timer_.async_wait([this](const boost::system::error_code& ec) {
      notice_armed_ = false;
      if (!ec) {
        send_notices();
      }
    });
  });
}

void RedisTransport::StreamReceipt::done(std::uint64_t seq, std::size_t bytes, bool handled) noexcept {
  progress(seq, bytes, handled);
}

void RedisTransport::StreamReceipt::done_run(std::uint64_t /*first*/, std::uint64_t last, std::size_t bytes) noexcept {
  progress(last, bytes, true);
}

void RedisTransport::StreamReceipt::progress(std::uint64_t last, std::size_t bytes, bool handled) noexcept {
  const auto owner = owner_.lock();
  if (!owner) {
    return;  // the transport is gone: nobody to tell
  }
  if (!handled) {
    ++owner->counters_.unhandled;
  }
  std::uint64_t seen = done_.load(std::memory_order_relaxed);
  while (seen < last && !done_.compare_exchange_weak(seen, last, std::memory_order_release, std::memory_order_relaxed)) {
  }
  // A notice at once every kReadNoticeBytes (the sender's window is a few of them), else soon.
  const bool now = bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes >= kReadNoticeBytes;
  if (now) {
    bytes_.store(0, std::memory_order_relaxed);
  }
  owner->notices_soon(now);
}

void RedisTransport::on_read_notice(const FrameView& frame) {
  {
    std::lock_guard lock(mutex_);
    auto* e = peers_.find_node(frame.sender);
    if (e == nullptr || e->conn != frame.instance) {
      return;  // from a process of that node that is not (or no longer) the joined one
    }
    counters_.acked += e->slot.window.read_up_to(frame.seq);
  }
  changed_.notify_all();
}

void RedisTransport::deliver(Incoming& in, const FrameView& frame, std::size_t bytes) {
  ++counters_.received;
  if (!frame.topic.starts_with(settings_.topic_prefix)) {
    ++counters_.unhandled;
    return;
  }
  RemoteEvent e;
  try {
    std::vector<std::uint8_t> payload(frame.payload.begin(), frame.payload.end());
    e.packed = codec::locate_event_args(payload);
    if (e.packed) {
      e.packed->bytes = std::move(payload);
    } else {
      e.args = codec::decode_event_args(payload);
    }
  } catch (const std::exception& ex) {
    ++counters_.dropped;
    DITASK_LOG(error, "redis") << "dropping event '" << frame.topic << "' from node " << frame.sender << ": " << ex.what();
    return;
  }
  e.event.assign(frame.topic.substr(settings_.topic_prefix.size()));
  e.receipt = in.receipt;
  e.seq = frame.seq;
  e.bytes = bytes;
  e.meta = in.meta;
  in.delivered = frame.seq;
  if (!e.meta) {
    if (in.early.size() < kEarlyKept && !announced_) {
      in.early.push_back(std::move(e));
      return;
    }
    auto meta = std::make_shared<EventMeta>();
    meta->sender = frame.sender;
    meta->transport = "redis";
    meta->remote = true;
    in.meta = meta;
    e.meta = meta;
  }
  batch_.push_back(std::move(e));
}

void RedisTransport::hand_over_batch() {
  if (!batch_.empty()) {
    std::vector<RemoteEvent> events;
    events.swap(batch_);
    inbox_.hand_over(std::move(events));
  }
}

bool RedisTransport::first_time(const std::string& what) {
  std::lock_guard lock(mutex_);
  return group_.first_time_locked(what);
}

}  // namespace ditask::detail::redis
