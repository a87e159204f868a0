// SPDX-License-Identifier: MIT
// The in-process transport (inproc://, as nng's): peers are transports in one process, and a
// channel is a function call into the peer's inbox. No sockets, no io thread, no clock of its
// own: it exists so the peer-group engine's policy (readiness, holding, backpressure, targets,
// membership, refusals) is tested alone. docs/design.md "Layout".
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "channel.hpp"
#include "inbox.hpp"
#include "inbox_transport.hpp"
#include "node_settings.hpp"
#include "peer_group.hpp"
#include "transport.hpp"

namespace ditask::detail::inproc {

class InprocTransport;

/// The peers that can reach each other: one per test. Thread: any.
class Network {
 public:
  /// Adds `t` and joins it with every transport already there (both ways).
  void join(const std::shared_ptr<InprocTransport>& t);
  /// Removes `t`; the others see it leave with `reason`.
  void leave(const InprocTransport& t, const std::string& reason);

 private:
  std::mutex mutex_;
  std::vector<std::weak_ptr<InprocTransport>> members_;
};

/// One node's transport on a Network. Thread: every method is safe from any thread; a receiver's
/// sink runs on the sending thread.
class InprocTransport final : public InboxTransport, public std::enable_shared_from_this<InprocTransport> {
 public:
  /// `expected`: the node ids readiness waits for.
  InprocTransport(std::shared_ptr<Network> network, NodeSettings settings, std::set<std::int64_t> expected);
  ~InprocTransport() override;
  InprocTransport(const InprocTransport&) = delete;
  InprocTransport& operator=(const InprocTransport&) = delete;

  /// Joins the network: this node and every node there meet.
  void start();
  std::string_view name() const noexcept override { return "inproc"; }
  /// Errors: as the mesh's (PeerGroup::refused_error, PeerGroup::not_ready_error).
  void wait_ready() override;
  void send_packed(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload) override;
  std::vector<PeerInfo> peers() const override;
  /// Leaves the network (peers see "bye", or "failed"). Idempotent.
  void shutdown(bool failed = false) noexcept override;

  /// What this node tells a peer it meets.
  PeerRecord record() const;
  /// Its --run-id: peers of another never join.
  const std::string& run_id() const noexcept { return settings_.run_id; }
  /// Network: `peer` (record `rec`) is reachable now, or can never join (`refusal` non-empty).
  void meet(const std::shared_ptr<InprocTransport>& peer, const PeerRecord& rec, const std::string& refusal);
  /// Network: the peer of process `instance` left.
  void part(std::int64_t node, std::uint64_t instance, const std::string& reason);
  /// A channel's delivery: one event from `from`.
  void deliver(const std::shared_ptr<const EventMeta>& from, std::string_view event,
               std::span<const std::uint8_t> payload);

 private:
  // A joined peer's channel: a call into its deliver(). Never full.
  class PeerChannel final : public Channel {
   public:
    PeerChannel(InprocTransport& from, const std::shared_ptr<InprocTransport>& to)
        : from_(from), to_(to), node_(to->settings_.node_id), max_(to->settings_.max_frame_bytes) {}
    std::string peer() const override { return "node " + std::to_string(node_); }
    std::size_t max_event_bytes() const noexcept override { return max_; }
    SendResult send_event(OutgoingEvent& event, std::uint64_t sender, std::uint16_t flags, bool drop_when_full,
                          Deadline& deadline, bool write_here) override;
    Blocked blocked() const override { return {peer(), {}}; }
    std::size_t send_held(const std::vector<HeldEvent>& events) override;

   private:
    InprocTransport& from_;
    const std::weak_ptr<InprocTransport> to_;
    const std::int64_t node_;
    const std::size_t max_;
  };
  struct Slot {
    std::shared_ptr<PeerChannel> channel;  ///< while joined
  };
  struct PeerTraits {
    using Conn = std::uint64_t;  // the joined process's instance (0: none)
    using Held = HeldEvent;
    using Slot = InprocTransport::Slot;
    using ChannelRef = std::shared_ptr<PeerChannel>;
    static ChannelRef channel(const auto& joined) { return joined.slot.channel; }
  };
  using Group = PeerGroup<PeerTraits>;
  using Peers = PeerTable<PeerTraits>;

  const std::shared_ptr<Network> network_;
  const NodeSettings settings_;
  const std::uint64_t instance_;
  const std::shared_ptr<const EventMeta> own_meta_;
  mutable std::mutex mutex_;  // guards group_ and the fields below; held while delivering, so order holds
  std::condition_variable changed_;  // a peer joined or left, or its held events left
  Group group_;
  bool started_ = false;
  bool closed_ = false;
};

}  // namespace ditask::detail::inproc
