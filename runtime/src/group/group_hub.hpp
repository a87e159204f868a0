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
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "group_round.hpp"

namespace ditask::detail {

/// What names one formation of a group in round numbers: its role and its members' attempts
/// ("trainer#0,1,0"), so a group formed anew after a restart counts its rounds from 1.
std::string group_key(const std::string& group, const std::vector<std::int64_t>& attempts);

/// Thread: any. arrive() blocks its caller (the serving thread of the arriving member's calls)
/// until the round completes or fails.
class GroupHub {
 public:
  /// This node's attempt (DITASK_ATTEMPT): rounds of groups formed with another incarnation of
  /// it are refused.
  void set_attempt(std::int64_t attempt);
  /// The number of this node's next collective of the group formation `key` (group_key; 1, 2, ...).
  std::uint64_t next_round(const std::string& key);
  /// Member `from` arrives at round `round` of `group` and waits (at most `timeout`) for the
  /// others. Returns {"ok": true, "value": result} or {"ok": false, "kind": "member_left" |
  /// "timeout" | "mismatch" | "stopped", "node": member or -1, "message": text}; every member of
  /// a round gets the same answer.
  nlohmann::json arrive(const std::string& group, std::uint64_t round, std::int64_t from, GroupArrival arrival,
                        std::chrono::milliseconds timeout);
  /// Incarnation `attempt` of `node` left: the rounds it is a member of fail now, and so do later
  /// ones of the groups formed with it (their rounds would no longer line up); a group formed
  /// with a later incarnation works.
  void node_left(std::int64_t node, std::int64_t attempt, const std::string& reason);
  /// Fails every waiting round; later arrivals fail at once. Idempotent.
  void stop();

 private:
  struct Round {
    Round(std::string group_name, const GroupArrival& first)
        : group(std::move(group_name)), state(first), attempts(first.attempts) {}
    std::string group;  // the group's name (its key also names the formation)
    GroupRound state;
    std::vector<std::int64_t> attempts;  // its members' attempts, as the first arrival said
    bool done = false;
    nlohmann::json answer;    // set once done (a success or a failure)
    std::size_t waiters = 0;  // arrive() calls holding it
  };
  using Key = std::pair<std::string, std::uint64_t>;
  // Members that disagree about who the members are (e.g. under --topology star, where a spoke
  // sees only the hub) land in rounds of different formation keys; the first disagreement seen
  // fails every such round of the same group name and number, and answers the members still to
  // come, until each member any of them named has arrived.
  struct Disagreement {
    nlohmann::json answer;
    std::map<std::int64_t, std::int64_t> attempts;  // member -> attempt, as the views said (-1: unknown)
    std::set<std::int64_t> members, arrived;
  };
  using Numbered = std::pair<std::string, std::uint64_t>;  // group name, round number
  // The disagreement at `at`, recorded with `answer` if there is none of the formation of
  // `members` (with `attempts`). Caller holds mutex_.
  Disagreement& disagree_locked(const Numbered& at, const nlohmann::json& answer,
                                const std::vector<std::int64_t>& members, const std::vector<std::int64_t>& attempts);
  // Fails, with d's answer, every open round of `at` of the same formation as `d`, and notes its
  // members and arrivals in `d`. Caller holds mutex_.
  void fail_numbered_locked(const Numbered& at, Disagreement& d);
  // Notes `round`'s members (with their attempts) and those of them that arrived in `d`.
  static void note_round(Disagreement& d, const Round& round);
  // Notes that `from` got d's answer; forgets `at` once every member named has. Caller holds mutex_.
  nlohmann::json answer_disagreement_locked(const Numbered& at, Disagreement& d, std::int64_t from);
  // Ends `round` with a failure (if it has not ended). Caller holds mutex_.
  void fail_locked(Round& round, const char* kind, std::int64_t node, const std::string& message);
  // Keeps what a failed round answered, for members that arrive after it ended. Caller holds mutex_.
  void remember_locked(const Key& key, const nlohmann::json& answer);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::uint64_t> next_;          // guarded by mutex_
  std::map<Key, Round> rounds_;                         // guarded by mutex_
  std::map<Key, nlohmann::json> ended_;                 // guarded by mutex_: failed rounds' answers
  std::map<Numbered, Disagreement> disagreements_;      // guarded by mutex_
  std::deque<Numbered> disagreement_order_;             // guarded by mutex_: oldest first, bounded
  std::deque<Key> ended_order_;                         // guarded by mutex_: oldest first, bounded
  struct Left {
    std::int64_t attempt = 0;
    std::string reason;
  };
  // The member that left, of the round's members, or -1. Caller holds mutex_.
  std::int64_t departed_locked(const std::vector<std::int64_t>& members, const std::vector<std::int64_t>& attempts) const;
  std::map<std::int64_t, Left> left_;                   // guarded by mutex_: the newest incarnation that left
  bool stopping_ = false;                               // guarded by mutex_
  std::int64_t attempt_ = 0;                            // guarded by mutex_
};

}  // namespace ditask::detail
