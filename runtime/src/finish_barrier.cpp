// SPDX-License-Identifier: MIT
#include "finish_barrier.hpp"

#include <algorithm>

namespace ditask::detail {

FinishBarrier::Seen FinishBarrier::scan(const std::vector<RemoteEvent>& events) {
  Seen seen;
  for (const auto& e : events) {
    if (e.notice) {
      seen.membership_changed = seen.membership_changed || e.event == events::peer_left;
    } else if (e.event == events::finish && e.meta && e.meta->remote && e.meta->attempt >= 0) {
      // attempt -1: relayed from a node this one has no link to (not a peer it waits for).
      seen.finished.emplace_back(e.meta->sender, e.meta->attempt);
    }
  }
  return seen;
}

void FinishBarrier::note(const Seen& seen) {
  if (seen.finished.empty() && !seen.membership_changed) {
    return;
  }
  {
    std::lock_guard lock(mutex_);
    finished_.insert(seen.finished.begin(), seen.finished.end());
  }
  changed_.notify_all();
}

bool FinishBarrier::wait(const std::function<std::vector<PeerInfo>()>& connected, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    const auto peers = connected();
    return std::all_of(peers.begin(), peers.end(),
                       [&](const PeerInfo& p) { return finished_.count({p.node_id, p.attempt}) > 0; });
  });
}

}  // namespace ditask::detail
