// SPDX-License-Identifier: MIT
#include "inline_write.hpp"

namespace ditask::detail {

namespace {
thread_local bool granted = false;
}  // namespace

void grant_inline_write() noexcept { granted = true; }

bool take_inline_write() noexcept {
  const bool was = granted;
  granted = false;
  return was;
}

}  // namespace ditask::detail
