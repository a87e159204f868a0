// SPDX-License-Identifier: MIT
// Catch's main, compiled once for the unit and the integration tests (ditask_catch_main).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
