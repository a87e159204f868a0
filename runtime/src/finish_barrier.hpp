// SPDX-License-Identifier: MIT
// The task layer's finish barrier: after this node broadcast `finish`, wait until every peer
// connected now has sent its own (or left), so what they emitted before stopping reaches this
// node's handlers. Transport-neutral: it learns finishes and leaves from the events a transport
// hands the task, and who is connected from Transport::peers().
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "ditask/router.hpp"
#include "remote_event.hpp"

namespace ditask::detail {

/// Which peer incarnations have sent `finish`. Lives as long as the task object (a worker may
/// start its task more than once; a peer's finish counts until that peer restarts).
/// Thread: any; note() is called on the transport's io thread, wait() on the stopping thread.
class FinishBarrier {
 public:
  /// What one batch of received events says (read before the batch goes to the bus).
  struct Seen {
    /// In arrival order: (node id, attempt, true) for its finish, (node id, 0, false) for its
    /// peer_joined (a new incarnation: its earlier finishes no longer count).
    struct Change {
      std::int64_t node = 0;
      std::int64_t attempt = 0;
      bool finished = false;
      bool operator==(const Change&) const = default;
    };
    std::vector<Change> changes;
    bool membership_changed = false;  ///< a peer_left notice
    bool finish_ok = false;           ///< a finish event (relayed or not) whose reason is "ok"
  };
  /// Scans a batch: finish events sent by a peer itself (not relayed), peer_joined and
  /// peer_left notices.
  static Seen scan(const std::vector<RemoteEvent>& events);
  /// Records a scanned batch once the bus holds its events; wakes a wait() only when this was
  /// the last finish it awaited, or a peer joined or left (then it reads the peers again).
  void note(const Seen& seen);
  /// Waits until every peer `connected()` lists has finished, at most `timeout`. Reads the
  /// peers when it starts and again after each join or leave, not after each finish. Returns
  /// false when the timeout passed first.
  bool wait(const std::function<std::vector<PeerInfo>()>& connected, std::chrono::milliseconds timeout);

 private:
  using Incarnation = std::pair<std::int64_t, std::int64_t>;  // (node id, attempt)
  /// One waiting wait(): the incarnations it still awaits, and whether to read the peers again.
  struct Waiter {
    std::set<Incarnation> awaited;
    bool reread = false;
  };

  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<Incarnation> finished_;  // guarded by mutex_
  std::vector<Waiter*> waiters_;    // guarded by mutex_; each lives on its wait()'s stack
};

}  // namespace ditask::detail
