// SPDX-License-Identifier: MIT
#include "inline_write.hpp"

#include <vector>

namespace ditask::detail {

namespace {
thread_local bool granted = false;
thread_local bool holding = false;
// The connections held; a vector of few (a served batch answers one caller).
thread_local std::vector<std::shared_ptr<HeldWrite>> held;
thread_local std::vector<std::shared_ptr<HeldWrite>> releasing;  // held's spare, kept for its capacity
}  // namespace

void grant_inline_write() noexcept { granted = true; }

bool take_inline_write() noexcept {
  const bool was = granted;
  granted = false;
  return was;
}

void hold_writes() noexcept { holding = true; }

bool holding_writes() noexcept { return holding; }

void add_held_write(const std::shared_ptr<HeldWrite>& link) {
  for (const auto& h : held) {
    if (h == link) {
      return;
    }
  }
  held.push_back(link);
}

void release_held_writes() noexcept {
  holding = false;
  if (held.empty()) {
    return;
  }
  releasing.swap(held);
  for (auto& link : releasing) {
    link->write_held();
  }
  releasing.clear();
}

}  // namespace ditask::detail
