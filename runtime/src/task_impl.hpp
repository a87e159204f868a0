// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ditask/task.hpp"
#include "event_bus.hpp"
#include "failure_slot.hpp"
#include "finish_barrier.hpp"
#include "worker_pool.hpp"

namespace ditask {

namespace detail {
class Transport;
class RpcEngine;
}  // namespace detail

/// The state behind ditask::task(). Split over task.cpp (lifecycle, labels), task_events.cpp and
/// task_middleware.cpp.
// Hidden: Task is exported, and its nested types would be too.
struct __attribute__((visibility("hidden"))) Task::Impl {
  struct Step {
    Middleware fn;
    std::optional<Lock> lock;
  };

  Router router;

  mutable std::mutex mutex;  // guards everything down to `pool`
  bool running = false;
  StartOptions options;
  std::shared_ptr<detail::EventBus> bus;
  std::shared_ptr<detail::Transport> transport;  // the worker's transport while the task runs, else null
  std::shared_ptr<detail::RpcEngine> rpc;        // remote calls over it, while the task runs
  std::set<std::string> labels;
  std::set<std::string> roles;
  std::vector<Step> middleware;
  std::vector<Wrapper> wrappers;
  std::unique_ptr<detail::WorkerPool> pool;

  Lock task_lock;
  Context ctx;  // touched by the run() thread and its middleware only
  std::atomic<bool> finish{false};
  detail::FinishBarrier finish_barrier;  // the peers' finishes, across this task's runs

  std::mutex stack_mutex;  // guards the two below; taken by pool threads
  std::vector<Backward> backward_stack;
  std::vector<detail::WorkerPool::Handle> pending;

  /// The first handler failure, reported once (to the task's calls and its waiters).
  std::shared_ptr<detail::FailureSlot> failures = std::make_shared<detail::FailureSlot>();

  /// The running task's bus and, in a worker, its transport (one lock for both: emit's hot path).
  struct Live {
    std::shared_ptr<detail::EventBus> bus;
    std::shared_ptr<detail::Transport> transport;
  };
  /// Errors: ditask::Error when not running.
  Live live() const;
  /// What one emit reports: the handler failure pending before it sends (none on the dispatcher
  /// thread, where it would be a handler's own), thrown by surface() once the event is sent. A
  /// failure of the emit's own event is the next emit's to report; if the send itself throws,
  /// the taken failure is pending again.
  class EmitReport {
   public:
    EmitReport(Impl& impl, const Live& live);
    ~EmitReport();
    EmitReport(const EmitReport&) = delete;
    EmitReport& operator=(const EmitReport&) = delete;
    /// Errors: the HandlerError taken at construction.
    void surface();

   private:
    Impl& impl_;
    std::exception_ptr earlier_;
  };
  /// The running task's bus. Errors: ditask::Error when not running.
  std::shared_ptr<detail::EventBus> live_bus() const { return live().bus; }
  /// The pool, created on first use. Errors: ditask::Error when not running.
  detail::WorkerPool& worker_pool();
  /// Throws the pending HandlerError once (not on the dispatcher thread).
  void rethrow_handler_error();
  /// Stores a handler failure (first wins) and logs it.
  void on_handler_error(const std::string& event, std::exception_ptr error);

  /// Starts `step`'s forward: inline, or on the pool in async mode; its backward is pushed.
  void start_forward(const Step& step);
  /// Waits for every pending forward; rethrows the first failure.
  void sync_forwards();
  /// Runs the pushed backward parts, last first.
  void run_backward();
};

/// Throws ditask::Error "task is not running" with the usual hint.
[[noreturn]] void throw_not_running();

}  // namespace ditask
