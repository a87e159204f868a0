// SPDX-License-Identifier: MIT
// What the runtime itself (worker mode, the signal watcher) and the unit tests do to the public
// classes beyond the module API: kept out of the installed headers and the exported symbols.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ditask/event_args.hpp"
#include "ditask/event_meta.hpp"
#include "ditask/router.hpp"
#include "ditask/task.hpp"

namespace ditask::detail {

class Transport;

/// What worker mode learned from the launcher about this process's place in the job.
struct RouterIdentity {
  std::int64_t node_id = 0;
  std::int64_t local_id = 0;
  std::int64_t parallel_workers = 1;
  std::set<std::string> labels;
  std::set<std::string> roles;
  std::int64_t attempt = 0;  ///< DITASK_ATTEMPT: this node's restart count
};

/// Router internals. Thread: any.
struct RouterAccess {
  /// Makes the router active with `identity` (worker mode, before the entry runs).
  static void activate(Router& router, RouterIdentity identity);
  /// Back to inactive (tests, shutdown).
  static void deactivate(Router& router) noexcept;
  /// Where peers() and stats() look (the worker's transport, set when a task joins it).
  static void set_transport(Router& router, const std::shared_ptr<Transport>& transport);
  /// The transport set_transport named, while it lives and the router is active.
  static std::shared_ptr<Transport> transport(const Router& router);
  /// Who this node's own events come from (node id, attempt, labels; transport "local").
  static std::shared_ptr<const EventMeta> local_meta(const Router& router);
};

/// Task internals. Thread: any.
struct TaskAccess {
  /// Handlers registered for `event`, waiters included. Errors: ditask::Error when not running.
  static std::size_t handler_count(const Task& task, std::string_view event);
  /// Queues a local event without surfacing an earlier handler failure, which stays pending for
  /// the module's own threads (runtime threads such as the signal watcher).
  /// Errors: ditask::Error when not running.
  static void post_local(Task& task, std::string_view event, EventArgs args = {});
  /// Events queued for the task's dispatcher and not yet run; 0 when it is not running.
  static std::size_t backlog(const Task& task) noexcept;
};

/// Replaces args(). Called by worker mode before the entry runs (and by tests), never concurrently
/// with args().
void set_args(std::vector<std::string> args);

}  // namespace ditask::detail
