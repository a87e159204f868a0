// SPDX-License-Identifier: MIT
#include "ditask/waiter.hpp"

#include "ditask/error.hpp"
#include "event_bus.hpp"
#include "transport/inline_write.hpp"

namespace ditask {

Waiter::Waiter(std::shared_ptr<detail::WaitState> state, std::weak_ptr<detail::EventBus> bus)
    : state_(std::move(state)), bus_(std::move(bus)) {}

Waiter::Waiter(Waiter&&) noexcept = default;

Waiter& Waiter::operator=(Waiter&& other) noexcept {
  if (this != &other) {
    Waiter old(std::move(*this));
    state_ = std::move(other.state_);
    bus_ = std::move(other.bus_);
  }
  return *this;
}

Waiter::~Waiter() {
  if (!state_) {
    return;
  }
  // Unregister whether or not the event came: a wait never leaves a handler behind.
  if (auto bus = bus_.lock(); bus && state_->handler_id != 0) {
    bus->remove(state_->event, state_->handler_id, true);
  }
}

std::optional<EventArgs> Waiter::wait(std::chrono::milliseconds timeout) {
  if (auto bus = bus_.lock(); bus && bus->on_dispatcher_thread()) {
    throw Error("wait for event '" + state_->event + "' on the dispatcher thread would never return",
                "wait from middleware or another thread, or handle the event with on()/once()");
  }
  detail::before_wait("event", state_->event);  // what this thread held may be what the event needs
  // Whatever this thread emits first after the wait (a request's follow-up) it writes itself.
  struct GrantOnReturn {
    ~GrantOnReturn() { detail::grant_inline_write(); }
  } grant;
  const bool forever = timeout == std::chrono::milliseconds::max();
  const auto deadline = forever ? std::chrono::steady_clock::time_point::max()
                                : std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(state_->mutex);
  std::uint64_t failures_seen = 0;
  bool check_failure = true;  // a failure pending before the wait surfaces first
  while (true) {
    if (check_failure && !state_->result && state_->failures_slot) {
      auto slot = state_->failures_slot;
      lock.unlock();
      slot->rethrow();  // a handler failed: the next module call that waits or emits reports it
      lock.lock();
    }
    failures_seen = state_->failures;
    auto over = [&] { return state_->result.has_value() || state_->aborted || state_->failures != failures_seen; };
    while (!over()) {
      const std::uint32_t seen = state_->changed.value();  // under the lock: a change after it moves the word
      lock.unlock();
      const bool woken = state_->changed.wait(seen, deadline);
      lock.lock();
      if (!woken && !over()) {
        return std::nullopt;  // timed out
      }
    }
    if (state_->result.has_value() || state_->aborted) {
      return state_->result;
    }
    check_failure = true;  // a handler failed while we waited (another thread may take it first)
  }
}

bool Waiter::aborted() const {
  std::lock_guard lock(state_->mutex);
  return state_->aborted && !state_->result.has_value();
}

const std::string& Waiter::event() const noexcept { return state_->event; }

}  // namespace ditask
