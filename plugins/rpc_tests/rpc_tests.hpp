// SPDX-License-Identifier: MIT
// What the entries of the rpc_tests module share (beside the mesh_tests helpers).
#pragma once

#include <chrono>
#include <stdexcept>

#include "../mesh_tests/mesh_tests.hpp"

namespace rpc_tests {

/// Serves calls until the driving node's task stops (its finish broadcast).
/// Errors: std::runtime_error after 2 minutes without it.
inline void serve_until_finish() {
  auto& task = ditask::task();
  auto finish = task.waiter(ditask::events::finish);  // before ready(): a finish that came already is kept
  task.ready();
  if (!finish.wait(std::chrono::minutes(2))) {
    throw std::runtime_error("no finish from the driving node within 2 minutes");
  }
}

}  // namespace rpc_tests
