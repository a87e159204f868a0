// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "ditask/event_args.hpp"
#include "ditask/export.hpp"

namespace ditask {

namespace detail {
struct WaitState;
class EventBus;
}  // namespace detail

/// A one-shot subscription made by Task::waiter(): it catches the next emit of its event from
/// the moment it is created, so an emit that races with the wait is never missed. Destroying it
/// removes the subscription whether or not the event came. Thread: wait() from any thread but
/// the task's dispatcher thread; move-only.
class DITASK_API Waiter {
 public:
  Waiter(Waiter&&) noexcept;
  Waiter& operator=(Waiter&&) noexcept;
  ~Waiter();

  /// Waits until the event arrives (its arguments), `timeout` passes, or the task fails or stops
  /// (both nullopt). Returns at once if the event already came. Errors: ditask::Error when
  /// called on the dispatcher thread (it would wait forever); ditask::HandlerError of a handler
  /// failure that is pending or happens while it waits (reported once, like emit's).
  std::optional<EventArgs> wait(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  /// True when the wait ended because the task failed or stopped (not by timeout).
  bool aborted() const;
  /// The event this waiter listens for.
  const std::string& event() const noexcept;

 private:
  friend class Task;
  Waiter(std::shared_ptr<detail::WaitState> state, std::weak_ptr<detail::EventBus> bus);

  std::shared_ptr<detail::WaitState> state_;
  std::weak_ptr<detail::EventBus> bus_;
};

}  // namespace ditask
