// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ditask/export.hpp"

namespace ditask {

namespace detail {
struct RouterAccess;
}  // namespace detail

/// Local events the runtime emits in a worker (handlers see them like any other event).
namespace events {
/// A peer completed the hello. Named arguments: node_id, attempt, labels (array), address.
inline constexpr const char* peer_joined = "ditask.peer_joined";
/// A peer that had joined is gone. Named arguments: node_id, attempt, reason ("bye" for an
/// orderly leave, "failed" when it left because its entry failed, "connection lost",
/// "replaced" when its restarted incarnation took over), lost (events queued for or in flight
/// to it that it never acknowledged).
inline constexpr const char* peer_left = "ditask.peer_left";
/// Broadcast by Task::stop() of a peer: positional `true`; named reason ("ok" or "failed") and
/// node_id. An "ok" finish from a peer sets Task::finish() here, so run() ends after its step.
inline constexpr const char* finish = "finish";
}  // namespace events

/// A peer that completed the hello, as it described itself.
struct PeerInfo {
  std::int64_t node_id = 0;
  std::int64_t attempt = 0;          ///< its DITASK_ATTEMPT (restart count)
  std::set<std::string> labels;      ///< its --labels plus "node.<id>"
  std::string address;               ///< the address it listens on
};

/// Event counters of this worker's transport (the mesh) since it started.
struct TransportStats {
  std::uint64_t sent = 0;       ///< events sent to peers (one per peer)
  std::uint64_t acked = 0;      ///< of those, acknowledged by the peer
  std::uint64_t received = 0;   ///< events received from peers
  std::uint64_t lost = 0;       ///< queued for or in flight to a peer that left before acknowledging
  std::uint64_t dropped = 0;    ///< not queued because the send queue was full (--send-policy drop)
  std::uint64_t unhandled = 0;  ///< received with no handler registered, after the startup window
};
/// The name TransportStats had while the mesh was the only transport.
using MeshStats = TransportStats;

/// This process's place in a distributed job (DI-engine's `Parallel` as `task.router`).
/// Inactive (node id 0, no labels) in a plain process; worker mode activates it before the
/// module's entry runs. Thread: any (values are fixed while the task runs).
class DITASK_API Router {
 public:
  Router();
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  /// True when this process is a worker of a ditask job.
  bool is_active() const noexcept;
  /// The node id (0 when inactive).
  std::int64_t node_id() const noexcept;
  /// Index of this worker within its launcher (0 when inactive).
  std::int64_t local_id() const noexcept;
  /// Workers started by this process's launcher (1 when inactive).
  std::int64_t parallel_workers() const noexcept;
  /// Labels given by `--labels`, plus `role.<name>` for each role of --roles (empty when
  /// inactive).
  std::set<std::string> labels() const;
  /// Roles given by the launcher's `--roles` for this node (empty when inactive or none).
  std::set<std::string> roles() const;

  /// Peers connected now (hello completed), by node id. Empty while inactive.
  std::vector<PeerInfo> peers() const;
  /// Counters of the transport (all zero while inactive).
  TransportStats stats() const;

 private:
  friend struct detail::RouterAccess;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ditask
