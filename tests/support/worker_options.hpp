// SPDX-License-Identifier: MIT
// Launcher options for the unit tests that plan jobs.
#pragma once

#include <cstdint>

#include "ditask/launcher/options.hpp"

namespace ditask::test {

/// Options of `ditask --package ./libfoo.so --parallel-workers n`.
inline launcher::Options workers(std::int64_t n) {
  launcher::Options o;
  o.package = "./libfoo.so";
  o.parallel_workers = n;
  return o;
}

}  // namespace ditask::test
