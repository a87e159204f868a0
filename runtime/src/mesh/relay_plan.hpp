// SPDX-License-Identifier: MIT
// A star's relay as one worker sees it (--topology star --relay): which worker is the hub, which
// peer relays for this spoke, and which events of a spoke go through the hub. No sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "settings.hpp"

namespace ditask::detail::mesh {

/// Decided once from the settings. Thread: any (immutable).
class RelayPlan {
 public:
  explicit RelayPlan(const MeshSettings& settings);

  /// This worker is the hub of a star (local worker 0), relaying or not.
  bool is_hub() const noexcept { return star_ && local_id_ == 0; }
  /// This worker is a hub that relays what its spokes send.
  bool hub_relays() const noexcept { return relay_ && is_hub(); }
  /// A spoke of a star whose hub does not relay: spokes cannot reach each other.
  bool spoke_without_relay() const noexcept { return star_ && !relay_ && !is_hub(); }
  /// For the error of a spoke's emit to `node`, which is not its peer: what would reach it
  /// (--relay for a spoke of its own star, --attach-to for another launcher's worker), or "".
  std::string unreachable_hint(std::int64_t node) const;
  /// For a spoke's event to `node`: the hub to send it through, or nullopt (no relaying star,
  /// this node itself, a node outside this launcher's job, or `direct`: a peer of its own).
  std::optional<std::int64_t> hub_for(std::int64_t node, bool direct) const;

 private:
  bool star_ = false;
  bool relay_ = false;
  std::int64_t node_id_ = 0;
  std::int64_t local_id_ = 0;
  std::optional<std::int64_t> hub_;  // the node id of local worker 0
  std::set<std::int64_t> job_;       // this launcher's workers
};

}  // namespace ditask::detail::mesh
