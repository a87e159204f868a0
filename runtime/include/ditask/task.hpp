// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ditask/context.hpp"
#include "ditask/event_args.hpp"
#include "ditask/export.hpp"
#include "ditask/group.hpp"
#include "ditask/handler.hpp"
#include "ditask/middleware.hpp"
#include "ditask/router.hpp"
#include "ditask/task_types.hpp"
#include "ditask/waiter.hpp"

namespace ditask {

class Task;

namespace detail {
struct TaskAccess;
}  // namespace detail

/// The process-wide task: event system, middleware pipeline, context, labels and roles.
///
/// Threading. Handlers registered with on()/once() run on one dispatcher thread per started
/// task, one at a time, in FIFO order: events emitted from one thread run in emit order, and
/// the handlers of one event in registration order (on_inline handlers may run on the thread
/// that received their event instead, in the dispatcher's stead: the same order). A local
/// emit() only queues the event and returns before its handlers ran; sync() waits until
/// everything queued before it has run.
/// Middleware runs on the thread calling run() (plus a pool of n_async_workers threads for
/// forwards in async mode and for parallel()). emit() and wait_for() are safe from any thread;
/// wait_for() refuses to run on the dispatcher thread, where it could never return.
///
/// Errors. A handler that throws (or whose parameter types do not fit the emitted arguments)
/// is logged with the event name and does not stop the dispatcher; the failure surfaces once,
/// as ditask::HandlerError, from the next emit/sync/run/wait_for/Waiter::wait on another thread
/// (a Waiter::wait in progress is woken for it). A middleware
/// exception propagates from run() (in async mode after every forward of the step finished;
/// pending wait_for calls are woken so the step can end).
class DITASK_API Task {
 public:
  Task();
  ~Task();
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  /// Starts the task. In a worker it joins the mesh and waits until every expected peer has
  /// completed the hello (up to --startup-timeout). Errors: ditask::Error when already running,
  /// n_async_workers < 1, or the mesh is not ready in time (naming the missing peers).
  [[nodiscard]] Running start(StartOptions options = {});
  /// Runs queued handlers, stops the dispatcher and pool, drops handlers, middleware and roles,
  /// wakes pending waits. In a worker it first broadcasts `finish` to the peers, with reason
  /// "failed" while an exception unwinds the stack (e.g. from the guard's destructor), else
  /// "ok". Idempotent. Thread: not from a handler or middleware.
  void stop() noexcept;
  /// Like stop(), with the finish reason given instead of guessed: "failed" when `failed` (for
  /// bindings whose errors are not C++ exceptions, such as Python's `with task.start():`).
  void stop(bool failed) noexcept;
  /// True between start() and stop().
  bool running() const noexcept;
  /// True when started with async_mode.
  bool async_mode() const noexcept;

  // ---- events ----
  /// Calls `fn` for every emit of `event` (exact name) after this call, and, during the startup
  /// window (until ready() or the first run()), for every remote `event` that came before it.
  /// `fn` takes typed parameters (one per positional argument, converted with nlohmann
  /// from_json, plus an optional last `const Kwargs&`) or a single `const EventArgs&`; either
  /// form may end with `const EventMeta&`, who sent the event (reply with
  /// `emit_to_node(meta.sender, ...)`). Errors: ditask::Error when not running.
  template <class F>
  HandlerId on(std::string event, F&& fn) {
    return add_handler(std::move(event), detail::make_handlers(std::forward<F>(fn)), false);
  }
  /// Like on(), but the handler runs for the next emit only.
  template <class F>
  HandlerId once(std::string event, F&& fn) {
    return add_handler(std::move(event), detail::make_handlers(std::forward<F>(fn)), true);
  }
  /// Like on(), for handlers that never wait: a remote `event` whose handlers all were
  /// registered with on_inline runs on the thread that received it (the transport's), as it
  /// arrives, when this node's dispatcher has nothing queued or running; otherwise it runs on
  /// the dispatcher as any event. Order holds either way. It saves the hand-off to the
  /// dispatcher thread (a reply to an event goes out one thread wake-up sooner). While it runs,
  /// the receiving thread reads nothing else, so it must be quick; a wait of the runtime in it
  /// (wait_for, a Waiter, sync(), a remote call's result, a group collective) throws
  /// ditask::Error. Local emits of `event` run on the dispatcher. docs/runtime.md.
  template <class F>
  HandlerId on_inline(std::string event, F&& fn) {
    return add_inline_handler(std::move(event), detail::make_handlers(std::forward<F>(fn)));
  }
  /// Removes every handler of every event matching `pattern` (fnmatch, as DI-engine). Returns
  /// how many were removed.
  std::size_t off(std::string_view pattern);
  /// Removes one handler; false when it was not (or no longer) registered.
  bool off(std::string_view event, HandlerId id);

  /// Emits to local handlers and, when the router is active, to remote peers. ditask::kw()
  /// values become named arguments. Errors: ditask::HandlerError of an earlier handler failure;
  /// ditask::Error when not running.
  template <class... A>
  void emit(std::string_view event, A&&... args) {
    if constexpr ((detail::is_packable_v<A> && ...)) {
      auto& wire = detail::pack_buffer();
      detail::pack_event(wire, args...);
      emit_wire(event, wire, Scope::local_and_remote, EventArgs::from(std::forward<A>(args)...));
    } else {
      emit_args(event, EventArgs::from(std::forward<A>(args)...), Scope::local_and_remote);
    }
  }
  /// Emits to this process's handlers only (DI-engine's `only_local=True`).
  template <class... A>
  void emit_local(std::string_view event, A&&... args) {
    emit_args(event, EventArgs::from(std::forward<A>(args)...), Scope::only_local);
  }
  /// Emits to remote peers only (DI-engine's `only_remote=True`); a no-op while inactive.
  template <class... A>
  void emit_remote(std::string_view event, A&&... args) {
    if constexpr ((detail::is_packable_v<A> && ...)) {
      auto& wire = detail::pack_buffer();
      detail::pack_event(wire, args...);
      emit_wire(event, wire, Scope::only_remote, std::nullopt);
    } else {
      emit_args(event, EventArgs::from(std::forward<A>(args)...), Scope::only_remote);
    }
  }
  /// Emits to one peer only (remote only). An event for a peer that is expected but not yet
  /// connected is queued. Errors: as emit_args, and ditask::Error when `node_id` is neither a
  /// peer nor expected.
  template <class... A>
  void emit_to_node(std::int64_t node_id, std::string_view event, A&&... args) {
    if constexpr ((detail::is_packable_v<A> && ...)) {
      auto& wire = detail::pack_buffer();
      detail::pack_event(wire, args...);
      emit_wire_to(node_id, {}, event, wire);
    } else {
      emit_args_to(node_id, {}, event, EventArgs::from(std::forward<A>(args)...));
    }
  }
  /// Emits to the connected peers having a label matching the fnmatch glob `pattern` (their
  /// --labels and "node.<id>"); remote only. No match is not an error.
  template <class... A>
  void emit_to_label(std::string_view pattern, std::string_view event, A&&... args) {
    if constexpr ((detail::is_packable_v<A> && ...)) {
      auto& wire = detail::pack_buffer();
      detail::pack_event(wire, args...);
      emit_wire_to(std::nullopt, pattern, event, wire);
    } else {
      emit_args_to(std::nullopt, pattern, event, EventArgs::from(std::forward<A>(args)...));
    }
  }
  /// Emits to the connected peers that have role `role` (--roles; their label `role.<role>`);
  /// remote only. No such peer is not an error.
  template <class... A>
  void emit_to_role(std::string_view role, std::string_view event, A&&... args) {
    emit_to_label("role." + std::string(role), event, std::forward<A>(args)...);
  }
  /// The untyped form of emit_to_node (`node_id`) and emit_to_label (`label_pattern`).
  void emit_args_to(std::optional<std::int64_t> node_id, std::string_view label_pattern,
                    std::string_view event, EventArgs args);
  /// The untyped form of emit.
  void emit_args(std::string_view event, EventArgs args, Scope scope = Scope::local_and_remote);

  /// Subscribes now to the next emit of `event`; wait on the result later. Prefer this over
  /// wait_for() when the event may be emitted between deciding to wait and waiting. During the
  /// startup window it takes the oldest kept remote event of that name no other once handler or
  /// waiter took yet; it does not end the window.
  Waiter waiter(std::string event);
  /// Ends the startup window: from now on a remote event reaches only the handlers registered
  /// when it arrives, and kept events no handler saw are dropped (stats().unhandled). The first
  /// run() calls it; call it yourself once your handlers are registered if the module never
  /// calls run(). Idempotent. Errors: ditask::Error when not running.
  void ready();
  /// Waits for the next emit of `event` and returns its arguments; nullopt on timeout or when
  /// the task fails or stops. Leaves no handler behind either way.
  std::optional<EventArgs> wait_for(std::string event,
                                    std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  /// Like wait_for(), but throws ditask::TimeoutError on timeout and ditask::Error when the
  /// wait was aborted (DI-engine's `ignore_timeout_exception=False`).
  EventArgs wait_for_or_throw(std::string event, std::chrono::milliseconds timeout);

  /// Waits for the async forwards started so far (not from inside one of them) and for the
  /// handlers of every event queued before the call (not on the dispatcher thread).
  /// Errors: rethrows the first middleware exception, or a pending HandlerError.
  void sync();

  // ---- middleware ----
  /// Appends a middleware (`void(Context&)` or `Backward(Context&)`); use_wrapper() wrappers
  /// apply. `lock = true` serialises it with the others using the task's shared lock.
  template <class F>
  void use(F&& fn, bool lock = false) {
    add_middleware(detail::to_middleware(std::forward<F>(fn)),
                   lock ? std::optional<Lock>(shared_lock()) : std::nullopt);
  }
  /// Appends a middleware serialised with every middleware given the same `lock`.
  template <class F>
  void use(F&& fn, const Lock& lock) {
    add_middleware(detail::to_middleware(std::forward<F>(fn)), lock);
  }
  /// Wraps every middleware used so far and every later one.
  void use_wrapper(Wrapper wrapper);
  /// Runs up to `max_step` steps: forward every middleware, sync, backward, sync; then stop if
  /// finish() is set (set on the last step), else renew(). Returns at once without middleware.
  /// finish() stays set afterwards (as in DI-engine): set_finish(false) before running again.
  void run(std::int64_t max_step = std::numeric_limits<std::int64_t>::max());
  /// Runs one middleware's forward now (on the pool in async mode) and pushes its backward part
  /// onto the task's stack, for backward().
  template <class F>
  void forward(F&& fn) {
    forward_middleware(detail::to_middleware(std::forward<F>(fn)));
  }
  /// Runs the pushed backward parts, last pushed first, after syncing pending forwards.
  void backward();
  /// One middleware that runs `fns` forwards in order, and their backwards in reverse order.
  template <class... F>
  Middleware serial(F&&... fns) {
    return serial_of({detail::to_middleware(std::forward<F>(fns))...});
  }
  /// One middleware that runs `fns` forwards concurrently on the pool and waits for all, then
  /// (after the rest of the chain) their backwards concurrently.
  template <class... F>
  Middleware parallel(F&&... fns) {
    return parallel_of({detail::to_middleware(std::forward<F>(fns))...});
  }
  /// `fn` (with `lock` when given) as a Middleware to call inside another middleware:
  /// `auto back = child(ctx); ...; if (back) back();` gives nested two-phase semantics.
  template <class F>
  Middleware wrap(F&& fn, std::optional<Lock> lock = std::nullopt) {
    return wrap_middleware(detail::to_middleware(std::forward<F>(fn)), std::move(lock));
  }
  Middleware serial_of(std::vector<Middleware> fns);
  Middleware parallel_of(std::vector<Middleware> fns);
  /// The task's own shared lock (what `use(fn, true)` uses).
  Lock shared_lock() const;

  /// True when the run loop should end after the current step. Local: not broadcast.
  bool finish() const noexcept;
  /// Sets finish(); run() ends after the current step.
  void set_finish(bool value = true) noexcept;
  /// Replaces the context by ctx().renew().
  void renew();
  /// The current context. Thread: the run() thread and its middleware.
  Context& ctx();

  // ---- labels, roles, router ----
  /// start()'s labels ∪ {"async"} in async mode ∪ ({"distributed", "node.<id>"} ∪ router
  /// labels when the router is active, else {"standalone"}).
  std::set<std::string> labels() const;
  /// True when any label matches the fnmatch glob `pattern` (e.g. "node.*").
  bool match_labels(std::string_view pattern) const;
  /// True when any label matches any of `patterns`.
  bool match_labels(const std::vector<std::string>& patterns) const;
  /// Adds a role (e.g. ditask::role::learner) until stop().
  void add_role(std::string role);
  /// True when `role` is this node's (from the launcher's --roles, or added), or when it has no
  /// role at all (DI-engine's wildcard).
  bool has_role(std::string_view role) const;
  /// This node's roles: --roles ones and added ones.
  std::set<std::string> roles() const;
  /// This process's router (inactive outside a ditask worker).
  Router& router() noexcept;
  /// The group of the nodes with role `role` among this node and its connected peers (every
  /// node when the job has no --roles), for barrier / broadcast / all_reduce (docs/groups.md).
  /// Call it once every member joined (after start()).
  Group group(std::string_view role);

 private:
  friend struct detail::TaskAccess;
  struct Impl;

  DITASK_LOCAL void start_locked(StartOptions options, std::shared_ptr<detail::EventBus> bus);
  DITASK_LOCAL void join_transport(const std::shared_ptr<detail::EventBus>& bus);
  DITASK_LOCAL void stop_as(bool failing) noexcept;
  HandlerId add_handler(std::string event, detail::Handlers handlers, bool once);
  HandlerId add_inline_handler(std::string event, detail::Handlers handlers);
  // The fast forms of emit and emit_args_to for simple arguments: `wire` is the event payload
  // (detail::pack_event), `local` the same arguments for this process's handlers (scope).
  void emit_wire(std::string_view event, const std::vector<std::uint8_t>& wire, Scope scope,
                 std::optional<EventArgs> local);
  void emit_wire_to(std::optional<std::int64_t> node_id, std::string_view label_pattern, std::string_view event,
                    const std::vector<std::uint8_t>& wire);
  void add_middleware(Middleware fn, std::optional<Lock> lock);
  void forward_middleware(Middleware fn);
  Middleware wrap_middleware(Middleware fn, std::optional<Lock> lock);

  std::unique_ptr<Impl> impl_;
};

/// DI-engine's roles, as strings for add_role/has_role.
namespace role {
inline constexpr const char* learner = "learner";
inline constexpr const char* collector = "collector";
inline constexpr const char* evaluator = "evaluator";
inline constexpr const char* fetcher = "fetcher";
}  // namespace role

/// The process-wide task (one per process: the runtime is a shared library). Thread: any.
DITASK_API Task& task();

}  // namespace ditask
