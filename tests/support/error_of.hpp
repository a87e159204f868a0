// SPDX-License-Identifier: MIT
#pragma once

#include <catch2/catch.hpp>

#include "ditask/error.hpp"

namespace ditask::test {

/// The ditask::Error that `fn` throws (the test fails when it throws none or another type).
template <class F>
ditask::Error error_of(F&& fn) {
  try {
    fn();
  } catch (const ditask::Error& e) {
    return e;
  }
  FAIL("expected a ditask::Error");
  return ditask::Error("unreachable");
}

}  // namespace ditask::test
