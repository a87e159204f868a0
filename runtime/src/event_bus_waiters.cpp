// SPDX-License-Identifier: MIT
// EventBus: the waiters (Task::waiter, wait_for) and what ends their waits early (a handler's
// failure, the task's abort).
#include "event_bus.hpp"

namespace ditask::detail {

std::shared_ptr<WaitState> EventBus::add_waiter(std::string event) {
  auto state = std::make_shared<WaitState>();
  state->event = event;
  std::weak_ptr<WaitState> weak = state;
  auto entry = std::make_shared<Entry>();
  entry->fn = [weak](const EventArgs& args, const EventMeta&) {
    if (auto s = weak.lock()) {
      {
        std::lock_guard lock(s->mutex);
        s->result = args;
      }
      s->changed.wake_all();
    }
  };
  entry->once = true;
  entry->on_arrival = true;
  entry->waiter = state;
  state->handler_id = register_entry(std::move(event), std::move(entry));
  return state;
}

void EventBus::set_abort(bool on) {
  std::lock_guard lock(mutex_);
  abort_ = on;
  if (on) {
    abort_all_waiters_locked();
  }
}

void EventBus::notify_failure() {
  std::lock_guard lock(mutex_);
  change_waiters_locked([](WaitState& s) { ++s.failures; });
}

void EventBus::abort_all_waiters_locked() {
  change_waiters_locked([](WaitState& s) { s.aborted = true; });
}

void EventBus::change_waiters_locked(const std::function<void(WaitState&)>& change) {
  for (auto& [event, entries] : handlers_) {
    for (auto& entry : entries) {
      if (auto s = entry->waiter.lock()) {
        {
          std::lock_guard lock(s->mutex);
          change(*s);
        }
        s->changed.wake_all();
      }
    }
  }
}

}  // namespace ditask::detail
