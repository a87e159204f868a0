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
  /// Records a scanned batch once the bus holds its events; wakes wait().
  void note(const Seen& seen);
  /// Waits until every peer `connected()` lists (read on each wake-up) has finished, at most
  /// `timeout`. Returns false when the timeout passed first.
  bool wait(const std::function<std::vector<PeerInfo>()>& connected, std::chrono::milliseconds timeout);

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::set<std::pair<std::int64_t, std::int64_t>> finished_;  // guarded by mutex_
};

}  // namespace ditask::detail
