// SPDX-License-Identifier: MIT
// Skipping a Catch test where the machine lacks what it needs (a namespace, root): CTest marks it
// skipped, not passed (the test executables' SKIP_REGULAR_EXPRESSION matches the line printed),
// and scripts/test.sh lists it with its reason at the end.
#pragma once

#include <iostream>

#include <catch2/catch.hpp>

/// Ends the running test as skipped, printing "[ditask test skipped] <reason>" (a CTest skip)
/// and a Catch warning with the reason.
#define DITASK_SKIP(reason)                                               \
  do {                                                                    \
    std::cout << "[ditask test skipped] " << (reason) << std::endl;       \
    WARN("skipped: " << (reason));                                        \
    return;                                                               \
  } while (false)
