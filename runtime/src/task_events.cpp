// SPDX-License-Identifier: MIT
// Task: events, waits and sync.
#include <utility>

#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/task.hpp"
#include "codec/envelope.hpp"
#include "transport/transport.hpp"
#include "internal_access.hpp"
#include "large_buffers.hpp"
#include "task_impl.hpp"
#include "trace/trace.hpp"

namespace ditask {
namespace {

// Where emit_to_node (`node_id`) or emit_to_label (`label_pattern`) sends; nullopt without a transport
// for a label (no peer matches). Errors: ditask::Error for a node when this is not a worker.
std::optional<detail::SendTarget> target_of(bool has_mesh, std::optional<std::int64_t> node_id,
                                                  std::string_view label_pattern, std::string_view event) {
  if (!has_mesh) {
    if (node_id) {
      throw Error("cannot emit '" + std::string(event) + "' to node " + std::to_string(*node_id) +
                      ": this process is not a ditask worker",
                  "run it with ditask --package ... --parallel-workers N");
    }
    return std::nullopt;
  }
  detail::SendTarget target;
  target.node = node_id;
  target.label = std::string(label_pattern);
  return target;
}

// Queues `event` for this process's own handlers (a local emit: its meta names this node).
// Errors: the task is not running.
void post_here(detail::EventBus& bus, std::string_view event, EventArgs args) {
  if (!bus.post(std::string(event), std::move(args))) {
    throw_not_running();
  }
}

// emit_to_node(<this node>, ...) of a worker: the event goes to this node's own handlers, so a
// handler answers a local sender as it answers a remote one.
bool is_this_node(bool has_transport, std::optional<std::int64_t> node_id, const Router& router) {
  return has_transport && node_id && *node_id == router.node_id();
}

}  // namespace

// Taken before the send, thrown after it: the emit that reports an earlier failure still emits
// its own event, so a caller that catches the HandlerError and goes on loses nothing.
Task::Impl::EmitReport::EmitReport(Impl& impl, const Live& live)
    : impl_(impl), earlier_(live.bus->on_dispatcher_thread() ? nullptr : impl.failures->take()) {}

Task::Impl::EmitReport::~EmitReport() {
  if (earlier_) {
    impl_.failures->store(std::move(earlier_));  // the send threw: still the next call's to report
  }
}

void Task::Impl::EmitReport::surface() {
  if (auto failure = std::exchange(earlier_, nullptr)) {
    std::rethrow_exception(failure);
  }
}

Task::Impl::Live Task::Impl::live() const {
  std::lock_guard lock(mutex);
  if (!running) {
    throw_not_running();
  }
  return Live{bus, transport};
}

void Task::Impl::on_handler_error(const std::string& event, std::exception_ptr error) {
  HandlerError failure(event, error);
  DITASK_LOG(error, "events") << failure.what() << (failure.hint().empty() ? "" : " (hint: " + failure.hint() + ")");
  failures->store(std::make_exception_ptr(std::move(failure)));
}

void Task::Impl::rethrow_handler_error() { failures->rethrow(); }

HandlerId Task::add_handler(std::string event, detail::Handlers handlers, bool once) {
  return impl_->live_bus()->add(std::move(event), std::move(handlers.raw), once, std::move(handlers.packed));
}

HandlerId Task::add_inline_handler(std::string event, detail::Handlers handlers) {
  return impl_->live_bus()->add(std::move(event), std::move(handlers.raw), false, std::move(handlers.packed), true);
}

std::size_t Task::off(std::string_view pattern) { return impl_->live_bus()->remove_matching(pattern); }

bool Task::off(std::string_view event, HandlerId id) { return impl_->live_bus()->remove(event, id); }

std::size_t detail::TaskAccess::handler_count(const Task& task, std::string_view event) {
  return task.impl_->live_bus()->count(event);
}

std::size_t detail::TaskAccess::backlog(const Task& task) noexcept {
  std::shared_ptr<detail::EventBus> bus;
  {
    std::lock_guard lock(task.impl_->mutex);
    if (task.impl_->running) {
      bus = task.impl_->bus;
    }
  }
  return bus ? bus->backlog() : 0;
}

namespace {
/// --trace: an instant per emit, with its target node when it has one.
void trace_emit(std::string_view event, std::optional<std::int64_t> node = std::nullopt) {
  if (detail::trace::on()) {
    detail::trace::record(detail::trace::Phase::instant, detail::trace::Category::event, event, 0,
                          node.value_or(-1));
  }
}
}  // namespace

void Task::emit_args(std::string_view event, EventArgs args, Scope scope) {
  trace_emit(event);
  const auto live = impl_->live();
  Impl::EmitReport report(*impl_, live);
  if (scope != Scope::only_local && live.transport) {
    live.transport->send(detail::SendTarget::all(), event, args);
  }
  if (scope != Scope::only_remote) {
    post_here(*live.bus, event, std::move(args));
  }
  report.surface();
}

namespace {
thread_local std::vector<std::uint8_t> t_pack_buffer;  // detail::pack_buffer()
// True while t_pack_buffer is a kept buffer taken, after a large event was given away, for this
// thread's next event (a stream's next event is likely as large).
thread_local bool t_pack_buffer_for_next = false;

}  // namespace

void detail::send_wire(Transport& transport, const SendTarget& target, std::string_view event,
                       const std::vector<std::uint8_t>& wire) {
  // A large payload in this thread's pack buffer is given to the transport instead of copied;
  // the next event is packed into a kept buffer (large_buffers.hpp), when one fits.
  if (&wire == &t_pack_buffer && wire.size() >= kLargeBufferFrom) {
    const std::size_t size = wire.size();
    transport.send_owned(target, event, std::move(t_pack_buffer));
    t_pack_buffer = reuse_large_buffer(size);
    t_pack_buffer.clear();
    t_pack_buffer_for_next = true;
  } else {
    transport.send_packed(target, event, wire);
  }
}

std::vector<std::uint8_t>& detail::pack_buffer() {
  if (t_pack_buffer.capacity() > (1U << 20) && !t_pack_buffer_for_next) {
    // One large event does not pin its size for the thread's life.
    recycle_large_buffer(std::move(t_pack_buffer));
    t_pack_buffer = {};
  }
  t_pack_buffer_for_next = false;
  return t_pack_buffer;
}

void Task::emit_wire(std::string_view event, const std::vector<std::uint8_t>& wire, Scope scope,
                     std::optional<EventArgs> local) {
  trace_emit(event);
  const auto live = impl_->live();
  Impl::EmitReport report(*impl_, live);
  if (scope != Scope::only_local && live.transport) {
    detail::send_wire(*live.transport, detail::SendTarget::all(), event, wire);
  }
  if (scope != Scope::only_remote) {
    post_here(*live.bus, event, std::move(*local));
  }
  report.surface();
}

void Task::emit_wire_to(std::optional<std::int64_t> node_id, std::string_view label_pattern,
                        std::string_view event, const std::vector<std::uint8_t>& wire) {
  trace_emit(event, node_id);
  const auto live = impl_->live();
  Impl::EmitReport report(*impl_, live);
  if (is_this_node(live.transport != nullptr, node_id, impl_->router)) {
    post_here(*live.bus, event, detail::codec::decode_event_args(wire));
  } else if (auto target = target_of(live.transport != nullptr, node_id, label_pattern, event)) {
    detail::send_wire(*live.transport, *target, event, wire);
  }
  report.surface();
}

void Task::emit_args_to(std::optional<std::int64_t> node_id, std::string_view label_pattern,
                        std::string_view event, EventArgs args) {
  trace_emit(event, node_id);
  const auto live = impl_->live();
  Impl::EmitReport report(*impl_, live);
  if (is_this_node(live.transport != nullptr, node_id, impl_->router)) {
    post_here(*live.bus, event, std::move(args));
  } else if (auto target = target_of(live.transport != nullptr, node_id, label_pattern, event)) {
    live.transport->send(*target, event, args);
  }
  report.surface();
}

void detail::TaskAccess::post_local(Task& task, std::string_view event, EventArgs args) {
  post_here(*task.impl_->live_bus(), event, std::move(args));
}

Waiter Task::waiter(std::string event) {
  auto bus = impl_->live_bus();
  auto state = bus->add_waiter(std::move(event));
  {
    std::lock_guard lock(state->mutex);
    state->failures_slot = impl_->failures;
  }
  return Waiter(std::move(state), bus);
}

void Task::ready() { impl_->live_bus()->end_startup_window(); }

std::optional<EventArgs> Task::wait_for(std::string event, std::chrono::milliseconds timeout) {
  return waiter(std::move(event)).wait(timeout);  // wait() surfaces a handler failure
}

EventArgs Task::wait_for_or_throw(std::string event, std::chrono::milliseconds timeout) {
  Waiter w = waiter(event);
  if (auto result = w.wait(timeout)) {
    return std::move(*result);
  }
  if (w.aborted()) {
    throw Error("wait for event '" + event + "' was aborted: the task failed or stopped");
  }
  throw TimeoutError(event);
}

void Task::sync() {
  // Inside an async forward, "every pending forward" includes the caller: wait for events only.
  if (!detail::WorkerPool::in_job()) {
    impl_->sync_forwards();
  }
  auto bus = impl_->live_bus();
  bus->drain();
  if (!bus->on_dispatcher_thread()) {
    impl_->rethrow_handler_error();
  }
}

}  // namespace ditask
