// SPDX-License-Identifier: MIT
// The calls a node waits for, each by its id with its callee and deadline. Nothing is allocated
// and no deadline is ordered per call (a remote call's hot path): the table is open-addressing,
// and the engine's service thread finds the calls past their deadline, and its next alarm, in one
// pass over the table when its alarm rings (once per timeout at a steady rate of calls: a call's
// deadline is its start plus its timeout). docs/design.md Decisions.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

namespace ditask::detail {

class CallState;

/// Thread: not safe; RpcEngine uses it under its mutex.
class PendingCalls {
 public:
  using Clock = std::chrono::steady_clock;
  /// One call waiting for its answer.
  struct Call {
    std::shared_ptr<CallState> state;
    std::int64_t node = 0;       ///< its callee
    Clock::time_point deadline;  ///< Clock::time_point::max(): none
  };

  /// Adds call `id`, which is not pending (ids are never reused).
  void add(std::uint64_t id, Call call) { calls_.emplace(id, std::move(call)); }
  /// Removes call `id` and returns its state; null when it is not pending (it ended already).
  std::shared_ptr<CallState> remove(std::uint64_t id);
  /// Appends to `expired` the ids of the calls whose deadline is at or before `now`, and returns
  /// the earliest deadline after it (Clock::time_point::max() when none).
  Clock::time_point expired(Clock::time_point now, std::vector<std::uint64_t>& expired) const;
  /// Calls `fn(id, call)` for each pending call, in no order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [id, call] : calls_) {
      fn(id, call);
    }
  }
  /// How many calls are pending.
  std::size_t size() const noexcept { return calls_.size(); }

 private:
  boost::unordered_flat_map<std::uint64_t, Call> calls_;
};

}  // namespace ditask::detail
