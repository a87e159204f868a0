// SPDX-License-Identifier: MIT
#include "ditask/middleware.hpp"

#include <condition_variable>
#include <mutex>

namespace ditask {

// A ticket lock: tickets are handed out in call order and served in the same order, which is
// what makes `use(fn, lock)` serialise middleware in registration order even on a pool.
struct Lock::State {
  std::mutex mutex;
  std::condition_variable served;
  std::uint64_t next_ticket = 0;  // guarded by mutex
  std::uint64_t serving = 0;      // guarded by mutex
};

Lock::Lock() : state_(std::make_shared<State>()) {}

std::uint64_t Lock::take_ticket() const {
  std::lock_guard lock(state_->mutex);
  return state_->next_ticket++;
}

void Lock::acquire(std::uint64_t ticket) const {
  std::unique_lock lock(state_->mutex);
  state_->served.wait(lock, [&] { return state_->serving == ticket; });
}

void Lock::release() const {
  {
    std::lock_guard lock(state_->mutex);
    ++state_->serving;
  }
  state_->served.notify_all();
}

}  // namespace ditask
