// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "ditask/export.hpp"

namespace ditask {

/// This process's place in a distributed job (DI-engine's `Parallel` as `task.router`).
/// Inactive (node id 0, no labels) in a plain process; worker mode activates it before the
/// module's entry runs. Thread: any (values are fixed while the task runs).
class DITASK_API Router {
 public:
  /// What worker mode learned from the launcher.
  struct Identity {
    std::int64_t node_id = 0;
    std::int64_t local_id = 0;
    std::int64_t parallel_workers = 1;
    std::set<std::string> labels;
  };

  Router();
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  /// True when this process is a worker of a ditask job.
  bool is_active() const noexcept;
  /// The node id (0 when inactive).
  std::int64_t node_id() const noexcept;
  /// Index of this worker within its launcher (0 when inactive).
  std::int64_t local_id() const noexcept;
  /// Workers started by this process's launcher (1 when inactive).
  std::int64_t parallel_workers() const noexcept;
  /// Labels given by `--labels` (empty when inactive).
  std::set<std::string> labels() const;

  /// Makes the router active with `identity`. Called by worker mode, not by modules.
  void activate(Identity identity);
  /// Back to inactive (tests, shutdown).
  void deactivate() noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ditask
