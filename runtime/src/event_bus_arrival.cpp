// SPDX-License-Identifier: MIT
// Events that run on arrival: when the bus is idle, the thread that received a remote event
// whose handlers all run on arrival (Task::on_inline, waiters) runs it itself, in the
// dispatcher's stead, so the event costs no hand-off to the dispatcher thread.
#include "event_bus.hpp"

#include "transport/inline_write.hpp"

namespace ditask::detail {

namespace {
thread_local const EventBus* arriving_on = nullptr;  // the bus whose arrivals this thread runs
}  // namespace

std::size_t EventBus::arrival_prefix_locked(const std::vector<RemoteEvent>& events) const {
  if (!started_ || stopping_ || borrowed_ || running_batch_ || !queue_.empty()) {
    return 0;  // not idle: what came before runs first, on the dispatcher
  }
  std::size_t count = 0;
  for (const auto& e : events) {
    if (e.only) {
      break;
    }
    auto it = handlers_.find(e.event);
    if (it == handlers_.end()) {
      break;  // no handler: the dispatcher counts it unhandled
    }
    bool all = true;
    for (const auto& entry : it->second) {
      all = all && entry->on_arrival;
    }
    if (!all) {
      break;
    }
    ++count;
  }
  return count;
}

bool EventBus::running_arrivals_here() const noexcept { return arriving_on == this; }

void EventBus::run_arrivals() noexcept {
  arriving_on = this;
  hold_writes();  // the handlers' emits of one read go out in one write, at the end
  {
    ReceiptRun told;
    for (const auto& job : arrivals_) {
      const OnArrivalScope scope(job.event, true);
      dispatch(job, told, arrival_scratch_);
    }
  }
  release_held_writes();
  arriving_on = nullptr;
  // The jobs are destroyed before the role goes back (a receipt or payload may be the last
  // reference to its link's buffers): arrivals_ is this thread's until then.
  arrivals_.clear();
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    borrowed_ = false;
    dispatched_ = posted_ - queued_jobs_;
    wake = !queue_.empty() || stopping_;
    done_.notify_all();  // drain() and stop() wait on it
  }
  if (wake) {
    queued_.wake_all();
  }
}

}  // namespace ditask::detail
