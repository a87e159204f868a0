// SPDX-License-Identifier: MIT
#include "startup_window.hpp"

namespace ditask::detail {

std::shared_ptr<KeptMark> StartupWindow::keep(const BusJob& job, bool once_present) {
  if (!open_ || count_ >= kMaxEvents || bytes_ + job.bytes > kMaxBytes) {
    return nullptr;
  }
  auto mark = std::make_shared<KeptMark>();
  mark->receipt = job.receipt;
  mark->seq = job.seq;
  Topic& topic = topics_[job.event];
  BusJob copy;
  copy.event = job.event;
  copy.args = job.args;
  copy.packed = job.packed;
  if (copy.packed) {
    copy.packed->own();  // kept for a while: not the read's whole shared buffer with it
  }
  copy.meta = job.meta;
  copy.seq = job.seq;
  copy.mark = mark;
  topic.events.push_back(Kept{std::move(copy), mark});
  if (once_present) {
    topic.once_taken = topic.events.size();  // the waiting once handler takes this one live
  }
  ++count_;
  bytes_ += job.bytes;
  return mark;
}

void StartupWindow::replay_for(const std::shared_ptr<HandlerEntry>& entry, const std::string& event,
                               std::vector<BusJob>& out) {
  if (!open_) {
    return;
  }
  auto it = topics_.find(event);
  if (it == topics_.end()) {
    return;
  }
  Topic& topic = it->second;
  const auto replay = [&](const Kept& kept) {
    BusJob job = kept.copy;
    job.only = entry;
    ++kept.mark->pending;
    out.push_back(std::move(job));
  };
  if (!entry->once) {
    for (const auto& kept : topic.events) {
      replay(kept);
    }
  } else if (topic.once_taken < topic.events.size()) {
    replay(topic.events[topic.once_taken++]);
    entry->replayed = true;
  }
}

std::vector<std::shared_ptr<KeptMark>> StartupWindow::close() {
  std::vector<std::shared_ptr<KeptMark>> unhandled;
  if (!open_) {
    return unhandled;
  }
  open_ = false;
  for (auto& [event, topic] : topics_) {
    for (auto& kept : topic.events) {
      if (kept.mark->pending > 0) {
        kept.mark->closed = true;  // its last pending job decides
      } else if (!kept.mark->handled) {
        unhandled.push_back(kept.mark);
      }
    }
  }
  topics_.clear();
  count_ = bytes_ = 0;
  return unhandled;
}

}  // namespace ditask::detail
