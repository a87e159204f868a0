// SPDX-License-Identifier: MIT
// A node's side of its groups' collectives: the round numbers of the collectives it calls, and,
// for the groups it coordinates (their first member), the rounds in progress. docs/groups.md.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "group_round.hpp"

namespace ditask::detail {

/// Thread: any. arrive() blocks its caller (the serving thread of the arriving member's calls)
/// until the round completes or fails.
class GroupHub {
 public:
  /// The number of this node's next collective of `group` (1, 2, ...).
  std::uint64_t next_round(const std::string& group);
  /// Member `from` arrives at round `round` of `group` and waits (at most `timeout`) for the
  /// others. Returns {"ok": true, "value": result} or {"ok": false, "kind": "member_left" |
  /// "timeout" | "mismatch" | "stopped", "node": member or -1, "message": text}; every member of
  /// a round gets the same answer.
  nlohmann::json arrive(const std::string& group, std::uint64_t round, std::int64_t from, GroupArrival arrival,
                        std::chrono::milliseconds timeout);
  /// `node` left: the rounds it is a member of fail now, and so do later ones (a group whose
  /// member left stays broken: its rounds would no longer line up).
  void node_left(std::int64_t node, const std::string& reason);
  /// Fails every waiting round; later arrivals fail at once. Idempotent.
  void stop();

 private:
  struct Round {
    explicit Round(const GroupArrival& first) : state(first) {}
    GroupRound state;
    bool done = false;
    nlohmann::json answer;    // set once done (a success or a failure)
    std::size_t waiters = 0;  // arrive() calls holding it
  };
  using Key = std::pair<std::string, std::uint64_t>;
  // Ends `round` with a failure (if it has not ended). Caller holds mutex_.
  void fail_locked(Round& round, const char* kind, std::int64_t node, const std::string& message);
  // Keeps what a failed round answered, for members that arrive after it ended. Caller holds mutex_.
  void remember_locked(const Key& key, const nlohmann::json& answer);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::uint64_t> next_;          // guarded by mutex_
  std::map<Key, Round> rounds_;                         // guarded by mutex_
  std::map<Key, nlohmann::json> ended_;                 // guarded by mutex_: failed rounds' answers
  std::deque<Key> ended_order_;                         // guarded by mutex_: oldest first, bounded
  std::map<std::int64_t, std::string> left_;            // guarded by mutex_
  bool stopping_ = false;                               // guarded by mutex_
};

}  // namespace ditask::detail
