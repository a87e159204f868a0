// SPDX-License-Identifier: MIT
#include "inproc.hpp"

#include <atomic>

#include "../codec/envelope.hpp"

namespace ditask::detail::inproc {

namespace {
std::uint64_t next_instance() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

}  // namespace

void Network::join(const std::shared_ptr<InprocTransport>& t) {
  std::vector<std::shared_ptr<InprocTransport>> others;
  {
    std::lock_guard lock(mutex_);
    for (const auto& w : members_) {
      if (auto o = w.lock()) {
        others.push_back(std::move(o));
      }
    }
    members_.push_back(t);
  }
  // Outside the network's lock: meeting takes each transport's own.
  const PeerRecord mine = t->record();
  for (const auto& o : others) {
    const PeerRecord theirs = o->record();
    // As the mesh's handshake: peers of another run never join, and each side says why.
    const std::string ours = t->run_id(), other = o->run_id();
    const bool differ = ours != other;
    o->meet(t, mine, differ ? "its run id is '" + ours + "', this node's '" + other + "'" : "");
    t->meet(o, theirs, differ ? "its run id is '" + other + "', this node's '" + ours + "'" : "");
  }
}

void Network::leave(const InprocTransport& t, const std::string& reason) {
  std::vector<std::shared_ptr<InprocTransport>> others;
  {
    std::lock_guard lock(mutex_);
    std::erase_if(members_, [&](const std::weak_ptr<InprocTransport>& w) {
      auto o = w.lock();
      return !o || o.get() == &t;
    });
    for (const auto& w : members_) {
      if (auto o = w.lock()) {
        others.push_back(std::move(o));
      }
    }
  }
  const PeerRecord rec = t.record();
  for (const auto& o : others) {
    o->part(rec.node, rec.instance, reason);
  }
}

InprocTransport::InprocTransport(std::shared_ptr<Network> network, NodeSettings settings,
                                 std::set<std::int64_t> expected)
    : network_(std::move(network)),
      settings_(std::move(settings)),
      instance_(next_instance()),
      own_meta_(sender_meta(record(), "inproc")),  // settings_ and instance_ are set by now
      group_(settings_, "inproc", counters_, world_beyond_local(settings_)) {
  for (const auto node : expected) {
    Peers::Expected e;
    e.node = node;
    e.address = "inproc://" + std::to_string(node);
    e.required = true;
    group_.table().expect(std::move(e));
  }
}

InprocTransport::~InprocTransport() { shutdown(); }

void InprocTransport::start() {
  {
    std::lock_guard lock(mutex_);
    started_ = true;
  }
  network_->join(shared_from_this());
}

PeerRecord InprocTransport::record() const {
  PeerRecord r;
  r.node = settings_.node_id;
  r.attempt = settings_.attempt;
  r.instance = instance_;
  r.labels = settings_.labels;
  r.labels.insert("node." + std::to_string(settings_.node_id));
  r.listen = "inproc://" + std::to_string(settings_.node_id);
  return r;
}

void InprocTransport::meet(const std::shared_ptr<InprocTransport>& peer, const PeerRecord& rec,
                           const std::string& refusal) {
  std::vector<RemoteEvent> notices;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return;
    }
    if (!refusal.empty()) {
      if (auto* e = group_.table().find_node(rec.node)) {
        e->permanent_error = refusal;  // readiness fails at once when it was required
      }
      changed_.notify_all();
      return;
    }
    auto join = group_.table().join(rec, rec.instance, rec.listen);
    join.expected->slot.channel = std::make_shared<PeerChannel>(*this, peer);
    // What was held for it goes first, in order, under this node's lock: a send that comes
    // after the join waits for the lock, so it cannot overtake them.
    group_.release_held_locked(join, *join.expected->slot.channel);
  }
  changed_.notify_all();
  inbox_.hand_over({peer_joined_notice(rec)});
}

void InprocTransport::part(std::int64_t node, std::uint64_t instance, const std::string& reason) {
  std::optional<PeerRecord> left;
  {
    std::lock_guard lock(mutex_);
    left = group_.table().leave(node, instance);
  }
  changed_.notify_all();
  if (left) {
    inbox_.hand_over({peer_left_notice(*left, reason, 0)});  // a call delivers at once: nothing is in flight
  }
}

void InprocTransport::deliver(const std::shared_ptr<const EventMeta>& from, std::string_view event,
                              std::span<const std::uint8_t> payload) {
  ++counters_.received;
  RemoteEvent e;
  e.event = std::string(event);
  e.meta = from;
  e.args = codec::decode_event_args(payload);
  e.bytes = event.size() + payload.size();
  inbox_.hand_over({std::move(e)});
}

void InprocTransport::wait_ready() {
  std::unique_lock lock(mutex_);
  if (group_.wait_ready(lock, changed_, [] { return true; }, [] { return false; })) {
    return;
  }
  if (group_.table().refused()) {
    throw group_.refused_error();
  }
  throw group_.not_ready_error([](const Peers::Expected&) { return std::string("not started"); }, "",
                               "start the peer, or raise --startup-timeout");
}

void InprocTransport::send_packed(const SendTarget& target, std::string_view event,
                                  std::span<const std::uint8_t> payload) {
  OutgoingEvent out(event, payload);
  group_.send(mutex_, changed_, [&] { return closed_; }, target, out, event, out.size());
}

SendResult InprocTransport::PeerChannel::send_event(OutgoingEvent& event, std::uint64_t /*sender*/,
                                                    std::uint16_t /*flags*/, bool /*drop_when_full*/,
                                                    Deadline& /*deadline*/, bool /*write_here*/) {
  const auto to = to_.lock();
  if (!to) {
    return SendResult::closed;
  }
  ++from_.counters_.acked;  // a call: handed over as it returns
  to->deliver(from_.own_meta_, event.topic(), event.payload());
  return SendResult::queued;
}

std::size_t InprocTransport::PeerChannel::send_held(const std::vector<HeldEvent>& events) {
  const auto to = to_.lock();
  for (const auto& h : events) {
    if (to) {
      ++from_.counters_.acked;
      to->deliver(from_.own_meta_, h.body->topic, h.body->payload);
    } else {
      ++from_.counters_.lost;
    }
  }
  return 0;
}

std::vector<PeerInfo> InprocTransport::peers() const {
  std::lock_guard lock(mutex_);
  return group_.table().peers();
}

void InprocTransport::shutdown(bool failed) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return;
    }
    closed_ = true;
    if (!started_) {
      return;
    }
  }
  changed_.notify_all();
  network_->leave(*this, failed ? "failed" : "bye");
}

}  // namespace ditask::detail::inproc
