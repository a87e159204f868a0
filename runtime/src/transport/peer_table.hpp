// SPDX-License-Identifier: MIT
// Who a worker expects and who joined, for any transport (the mesh today, Redis next): readiness,
// the peers an event is routed to, restarts against duplicates, the events held for a peer that
// has not joined yet, and the membership notices. docs/design.md "Layout".
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../remote_event.hpp"
#include "ditask/router.hpp"

namespace ditask::detail {

/// What a peer said about itself when it joined (the mesh's hello).
struct PeerRecord {
  std::int64_t node = 0;
  std::int64_t attempt = 0;      ///< its DITASK_ATTEMPT (restart count)
  std::uint64_t instance = 0;    ///< random per process: a restart and a duplicate look alike otherwise
  std::set<std::string> labels;  ///< its labels, "node.<id>" included
  std::string listen;            ///< the address it listens on ("" when it does not)
  std::int64_t world_size = 0;   ///< the --world-size of its job of several launchers, else 0
};

/// True when one of `labels` matches the glob `pattern` (SendTarget::label).
bool labels_match(const std::set<std::string>& labels, const std::string& pattern);

/// The notices a transport hands its sink when a peer joins (labels, address) or leaves (reason,
/// events sent to it that it never acknowledged).
RemoteEvent peer_joined_notice(const PeerRecord& peer);
RemoteEvent peer_left_notice(const PeerRecord& peer, const std::string& reason, std::uint64_t lost);

/// The table itself. `Traits` names what the transport keeps: `Conn` (its connection to a joined
/// peer, compared and copied), `Held` (one event held for a peer before it joined) and `Slot`
/// (per expected peer: how the transport reaches it). Thread: none of its own; the transport's
/// lock guards it.
template <class Traits>
class PeerTable {
 public:
  using Conn = typename Traits::Conn;
  using Held = typename Traits::Held;
  using Slot = typename Traits::Slot;

  /// A peer this worker waits for, or one that joined without being expected.
  struct Expected {
    std::optional<std::int64_t> node;  ///< unknown until it joins, when known by address only
    std::string address;               ///< where it listens, as far as known
    bool required = false;             ///< readiness waits for it
    bool joined_ever = false;
    Conn conn{};                       ///< its connection while joined
    std::string permanent_error;       ///< a refusal waiting cannot change: readiness fails at once
    std::vector<Held> held;            ///< sent to it before it first joined
    std::size_t held_bytes = 0;
    Slot slot{};
  };
  /// A peer that is joined now.
  struct Joined {
    PeerRecord record;
    Conn conn{};
  };

  /// `world_size`: the whole job's size when it is larger than the peers this worker expects by
  /// name (a job of several launchers): readiness then also waits for world_size - 1 peers.
  explicit PeerTable(std::optional<std::int64_t> world_size = std::nullopt) : world_size_(world_size) {}

  /// Adds an expected peer (a deque: references to it stay valid).
  Expected& expect(Expected e) {
    expected_.push_back(std::move(e));
    return expected_.back();
  }
  std::deque<Expected>& expected() noexcept { return expected_; }
  const std::deque<Expected>& expected() const noexcept { return expected_; }
  const std::map<std::int64_t, Joined>& joined() const noexcept { return joined_; }

  /// The joined peer `node`, or null.
  const Joined* joined(std::int64_t node) const {
    auto it = joined_.find(node);
    return it == joined_.end() ? nullptr : &it->second;
  }
  /// The expected peer with node id `node`, or null.
  Expected* find_node(std::int64_t node) {
    return const_cast<Expected*>(static_cast<const PeerTable*>(this)->find_node(node));
  }
  const Expected* find_node(std::int64_t node) const {
    auto it = std::find_if(expected_.begin(), expected_.end(), [&](const Expected& e) { return e.node == node; });
    return it == expected_.end() ? nullptr : &*it;
  }
  /// The expected peer `peer` is: by node id, by the address it was reached at, or by the
  /// address it listens on while its node id is unknown. Null for a stranger.
  Expected* find(const PeerRecord& peer, std::string_view reached_at) {
    for (auto& e : expected_) {
      if (e.node == peer.node || (!reached_at.empty() && e.address == reached_at) ||
          (!e.node && !peer.listen.empty() && e.address == peer.listen)) {
        return &e;
      }
    }
    return nullptr;
  }

  /// The joined peer `peer` would duplicate: another process with its node id and an attempt
  /// at least as new (a newer attempt is a restart and replaces it). Null when none.
  const Joined* duplicate_of(const PeerRecord& peer) const {
    const Joined* j = joined(peer.node);
    return j != nullptr && j->record.instance != peer.instance && peer.attempt <= j->record.attempt ? j : nullptr;
  }

  /// What join() did.
  struct Join {
    Expected* expected = nullptr;
    bool first = false;        ///< its first join: `held` are the events sent to it before
    std::vector<Held> held;
  };
  /// `peer` joined over `conn` (reached at `reached_at`, "" when it called us): it replaces a
  /// joined record of its node id, and an expected peer it matches (by node id or address) is
  /// joined with it, twins included (both sides dialled); a stranger is added.
  Join join(const PeerRecord& peer, Conn conn, std::string_view reached_at) {
    joined_[peer.node] = Joined{peer, conn};
    Join out;
    out.expected = find(peer, reached_at);
    if (out.expected == nullptr) {
      Expected e;
      e.address = peer.listen;
      out.expected = &expect(std::move(e));
    }
    Expected& e = *out.expected;
    e.node = peer.node;
    e.conn = std::move(conn);
    if (!e.joined_ever) {
      e.joined_ever = true;
      out.first = true;
      out.held = std::move(e.held);
      e.held.clear();
      e.held_bytes = 0;
    }
    for (auto& other : expected_) {
      if (&other != &e && (other.node == peer.node || (!other.node && other.address == peer.listen))) {
        other.node = peer.node;
        other.joined_ever = true;
      }
    }
    return out;
  }

  /// `conn` closed: its expected peer has no connection now, and when it was `node`'s joined
  /// connection, `node` leaves (its record is returned, for peer_left). Nullopt otherwise.
  std::optional<PeerRecord> leave(std::optional<std::int64_t> node, const Conn& conn) {
    for (auto& e : expected_) {
      if (e.conn == conn) {
        e.conn = Conn{};
      }
    }
    if (!node) {
      return std::nullopt;
    }
    auto it = joined_.find(*node);
    if (it == joined_.end() || !(it->second.conn == conn)) {
      return std::nullopt;
    }
    PeerRecord left = std::move(it->second.record);
    joined_.erase(it);
    return left;
  }

  /// Whether `bytes` more may be held for `e` within `bound` (one event always fits an empty queue).
  static bool has_room(const Expected& e, std::size_t bytes, std::size_t bound) noexcept {
    return e.joined_ever || e.held_bytes == 0 || e.held_bytes + bytes <= bound;
  }
  /// Holds `event` (of `bytes`) for `e` until it first joins; false (not held) when that would
  /// exceed `bound`.
  bool hold(Expected& e, Held event, std::size_t bytes, std::size_t bound) {
    if (!has_room(e, bytes, bound)) {
      return false;
    }
    e.held.push_back(std::move(event));
    e.held_bytes += bytes;
    return true;
  }

  /// Every required peer joined at least once (and, for a job of several launchers, enough of them).
  bool ready() const {
    for (const auto& e : expected_) {
      if (e.required && !e.joined_ever) {
        return false;
      }
    }
    return !world_size_ || joined_ever_count() >= *world_size_ - 1;
  }
  /// Records why the job cannot form whatever peers join (a peer of another --world-size): a
  /// readiness wait fails with it. The first 8 reasons are kept.
  void fail_job(std::string why) {
    if (job_errors_.size() < 8 && std::find(job_errors_.begin(), job_errors_.end(), why) == job_errors_.end()) {
      job_errors_.push_back(std::move(why));
    }
  }
  /// A required peer can never join (it refused us, or we it, for good), or the job cannot form.
  bool refused() const {
    return !job_errors_.empty() ||
           std::any_of(expected_.begin(), expected_.end(),
                       [](const Expected& e) { return e.required && !e.joined_ever && !e.permanent_error.empty(); });
  }
  /// Some expected peer never joined (its events are held: routing takes the slow path).
  bool any_not_joined() const {
    return std::any_of(expected_.begin(), expected_.end(), [](const Expected& e) { return !e.joined_ever; });
  }
  /// "node N (address)", or the address while the node id is unknown.
  static std::string name_of(const Expected& e) {
    return e.node ? "node " + std::to_string(*e.node) + " (" + e.address + ")" : e.address;
  }
  /// The required peers not joined yet, each as "<name>: <why(peer)>", for a readiness error.
  std::vector<std::string> missing(const std::function<std::string(const Expected&)>& why) const {
    std::vector<std::string> out;
    for (const auto& e : expected_) {
      if (e.required && !e.joined_ever) {
        out.push_back(name_of(e) + ": " + why(e));
      }
    }
    if (out.empty() && world_size_) {
      const std::int64_t want = *world_size_ - 1;
      const std::int64_t have = joined_ever_count();
      out.push_back(std::to_string(want) + (want == 1 ? " peer" : " peers") + " (--world-size " +
                    std::to_string(*world_size_) + "), of which " + std::to_string(have) +
                    (have == 1 ? " has" : " have") + " connected");
    }
    return out;
  }
  /// The required peers that can never join, each as "<name>: <why>", then fail_job()'s reasons.
  std::vector<std::string> refusals() const {
    std::vector<std::string> out = job_errors_;
    for (const auto& e : expected_) {
      if (e.required && !e.joined_ever && !e.permanent_error.empty()) {
        out.push_back(name_of(e) + ": " + e.permanent_error);
      }
    }
    return out;
  }
  /// The joined peers, by node id.
  std::vector<PeerInfo> peers() const {
    std::vector<PeerInfo> out;
    for (const auto& [node, j] : joined_) {
      out.push_back(PeerInfo{node, j.record.attempt, j.record.labels, j.record.listen});
    }
    return out;
  }

 private:
  // Distinct node ids of expected peers that have joined at least once.
  std::int64_t joined_ever_count() const {
    std::set<std::int64_t> seen;
    for (const auto& e : expected_) {
      if (e.joined_ever && e.node) {
        seen.insert(*e.node);
      }
    }
    return static_cast<std::int64_t>(seen.size());
  }

  std::optional<std::int64_t> world_size_;
  std::vector<std::string> job_errors_;
  std::deque<Expected> expected_;
  std::map<std::int64_t, Joined> joined_;
};

}  // namespace ditask::detail
