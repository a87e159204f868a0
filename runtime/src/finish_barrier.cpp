// SPDX-License-Identifier: MIT
#include "finish_barrier.hpp"

#include <string_view>

namespace ditask::detail {

FinishBarrier::Seen FinishBarrier::scan(const std::vector<RemoteEvent>& events) {
  // string_view: a name of another length is told apart without comparing its characters.
  constexpr std::string_view finish = events::finish;
  Seen seen;
  for (const auto& e : events) {
    if (e.notice && e.event == events::peer_joined && e.args) {
      const auto node = e.args->kwargs.find("node_id");
      if (node != e.args->kwargs.end() && node->is_number_integer()) {
        seen.changes.push_back({node->get<std::int64_t>(), 0, false});
      }
    } else if (e.notice) {
      seen.membership_changed = seen.membership_changed || e.event == events::peer_left;
    } else if (e.event == finish) {
      if (!e.relayed && e.meta && e.meta->remote) {
        seen.changes.push_back({e.meta->sender, e.meta->attempt, true});
      }
      const auto kwargs = e.unpacked().kwargs;
      const auto reason = kwargs.find("reason");
      seen.finish_ok = seen.finish_ok || (reason != kwargs.end() && reason->is_string() && *reason == "ok");
    }
  }
  return seen;
}

void FinishBarrier::note(const Seen& seen) {
  if (seen.changes.empty() && !seen.membership_changed) {
    return;
  }
  bool wake = false;
  // A join (a new incarnation to await) or a leave (one awaited no longer): waiters read the peers.
  bool membership = seen.membership_changed;
  {
    std::lock_guard lock(mutex_);
    for (const auto& change : seen.changes) {
      if (change.finished) {
        finished_.insert({change.node, change.attempt});
        for (Waiter* w : waiters_) {
          wake = (w->awaited.erase({change.node, change.attempt}) > 0 && w->awaited.empty()) || wake;
        }
      } else {
        std::erase_if(finished_, [&](const auto& f) { return f.first == change.node; });
        membership = true;
      }
    }
    if (membership) {
      for (Waiter* w : waiters_) {
        w->reread = true;
      }
      wake = wake || !waiters_.empty();
    }
  }
  if (wake) {
    changed_.notify_all();
  }
}

bool FinishBarrier::wait(const std::function<std::vector<PeerInfo>()>& connected, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex_);
  Waiter me;
  waiters_.push_back(&me);
  struct Leave {
    std::vector<Waiter*>& waiters;
    Waiter* me;
    ~Leave() { std::erase(waiters, me); }
  } leave{waiters_, &me};
  for (;;) {
    me.reread = false;
    me.awaited.clear();
    for (const PeerInfo& p : connected()) {
      if (finished_.count({p.node_id, p.attempt}) == 0) {
        me.awaited.insert({p.node_id, p.attempt});
      }
    }
    if (me.awaited.empty()) {
      return true;
    }
    if (!changed_.wait_until(lock, deadline, [&] { return me.reread || me.awaited.empty(); })) {
      return false;
    }
    if (!me.reread) {
      return true;  // the last awaited finish came, and nobody joined or left meanwhile
    }
  }
}

}  // namespace ditask::detail
