// SPDX-License-Identifier: MIT
#include "pending_calls.hpp"

#include <algorithm>

#include "ditask/rpc_future.hpp"

namespace ditask::detail {

std::shared_ptr<CallState> PendingCalls::remove(std::uint64_t id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) {
    return nullptr;
  }
  auto state = std::move(it->second.state);
  calls_.erase(it);
  return state;
}

PendingCalls::Clock::time_point PendingCalls::expired(Clock::time_point now,
                                                      std::vector<std::uint64_t>& expired) const {
  auto next = Clock::time_point::max();
  for (const auto& [id, call] : calls_) {
    if (call.deadline <= now) {
      expired.push_back(id);
    } else {
      next = std::min(next, call.deadline);
    }
  }
  return next;
}

}  // namespace ditask::detail
