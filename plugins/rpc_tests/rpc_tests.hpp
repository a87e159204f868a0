// SPDX-License-Identifier: MIT
// What the entries of the rpc_tests module share (beside the mesh_tests helpers).
#pragma once

#include <chrono>
#include <stdexcept>

#include "../mesh_tests/mesh_tests.hpp"

namespace rpc_tests {

/// Catches the driving node's finish from its creation on: make it before ready() (which drops the
/// early events nobody waits for) and before anything that may take longer than the driver.
class FinishWatch {
 public:
  FinishWatch() : finish_(ditask::task().waiter(ditask::events::finish)) {}
  /// Waits for the finish. Errors: std::runtime_error after 2 minutes without it.
  void wait() {
    if (!finish_.wait(std::chrono::minutes(2))) {
      throw std::runtime_error("no finish from the driving node within 2 minutes");
    }
  }

 private:
  ditask::Waiter finish_;
};

/// Serves calls until the driving node's task stops (its finish broadcast), caught by `finish`
/// (made before anything the driver may outlast). Errors: std::runtime_error after 2 minutes
/// without it.
inline void serve_until_finish(FinishWatch& finish) {
  ditask::task().ready();
  finish.wait();
}

/// serve_until_finish() with a watch made now: only right after start(), before this node did
/// anything that lets the driver end.
inline void serve_until_finish() {
  FinishWatch finish;
  serve_until_finish(finish);
}

}  // namespace rpc_tests
