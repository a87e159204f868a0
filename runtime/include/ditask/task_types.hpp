// SPDX-License-Identifier: MIT
// What Task::start takes and returns, and the small types of Task's calls (task.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "ditask/context.hpp"
#include "ditask/export.hpp"

namespace ditask {

class Task;

/// Options of Task::start (DI-engine's `task.start(async_mode, n_async_workers, ctx, labels)`).
struct StartOptions {
  /// Run the forwards of one step concurrently on a pool, then sync().
  bool async_mode = false;
  /// Threads of that pool (also used by parallel() in sync mode).
  int n_async_workers = 3;
  /// Extra labels for Task::labels().
  std::set<std::string> labels = {};
  /// The initial context; a default Context when absent.
  std::optional<Context> ctx = std::nullopt;
};

/// Where an emit goes.
enum class Scope {
  local_and_remote,  ///< remote peers (when the router is active), then this process
  only_local,        ///< handlers of this process only
  only_remote,       ///< remote peers only (nothing while the router is inactive)
};

/// Identifies one registered handler, for Task::off(event, id).
using HandlerId = std::uint64_t;

/// Stops the task when destroyed: `auto running = task().start();` is DI-engine's
/// `with task.start():`. Move-only.
class DITASK_API Running {
 public:
  Running(Running&& other) noexcept : task_(std::exchange(other.task_, nullptr)) {}
  Running& operator=(Running&&) = delete;
  Running(const Running&) = delete;
  ~Running();
  /// Stops the task now instead of at scope exit.
  void stop() noexcept;

 private:
  friend class Task;
  explicit Running(Task* task) noexcept : task_(task) {}
  Task* task_;
};

}  // namespace ditask
