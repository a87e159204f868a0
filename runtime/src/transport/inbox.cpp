// SPDX-License-Identifier: MIT
#include "inbox.hpp"

namespace ditask::detail {

void Inbox::hand_over(std::vector<RemoteEvent>&& events) {
  std::unique_lock lock(mutex_);
  if (sink_) {
    sink_(std::move(events));
    return;
  }
  if (!had_sink_) {
    prestart_.insert(prestart_.end(), std::make_move_iterator(events.begin()), std::make_move_iterator(events.end()));
    return;
  }
  lock.unlock();
  for (auto& e : events) {
    if (e.receipt) {
      e.receipt->done(e.seq, e.bytes, false);
    }
  }
}

void Inbox::attach(Sink sink) {
  std::lock_guard lock(mutex_);
  sink_ = std::move(sink);
  had_sink_ = true;
  if (!prestart_.empty()) {
    sink_(std::move(prestart_));
    prestart_.clear();
  }
}

void Inbox::detach() {
  std::lock_guard lock(mutex_);
  sink_ = nullptr;
}

}  // namespace ditask::detail
