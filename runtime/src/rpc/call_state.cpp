// SPDX-License-Identifier: MIT
#include "call_state_impl.hpp"

#include "../transport/inline_write.hpp"
#include "rpc_engine.hpp"
#include "rpc_wire.hpp"

namespace ditask {

const char* RpcError::kind_name(Kind kind) noexcept {
  switch (kind) {
    case Kind::remote_exception: return "remote_exception";
    case Kind::unknown_function: return "unknown_function";
    case Kind::bad_arguments: return "bad_arguments";
    case Kind::bad_result: return "bad_result";
    case Kind::unknown_object: return "unknown_object";
    case Kind::node_left: return "node_left";
    case Kind::not_connected: return "not_connected";
    case Kind::timeout: return "timeout";
    case Kind::stopped: return "stopped";
  }
  return "unknown";
}

RpcError::RpcError(Kind kind, std::int64_t node, std::string function, std::string message, std::string hint)
    : Error("call '" + function + "' on node " + std::to_string(node) + " failed: " + message, std::move(hint)),
      kind_(kind),
      node_(node),
      function_(std::move(function)),
      reason_(std::move(message)) {}

namespace detail {

std::uint64_t& replies_settled_here() noexcept {
  thread_local std::uint64_t settled = 0;
  return settled;
}

CallState::CallState() : impl_(std::make_unique<Impl>()) {}
CallState::~CallState() = default;

bool CallState::wait(std::chrono::milliseconds timeout) const {
  if (impl_->done.load(std::memory_order_acquire)) {
    return true;  // no wait (no lock): no inline grant either, so a loop of calls is batched by the io thread
  }
  before_wait("the result of call", impl_->function);  // an answer this thread held may be what it needs
  const auto deadline = timeout == std::chrono::milliseconds::max() ? std::chrono::steady_clock::time_point::max()
                                                                     : std::chrono::steady_clock::now() + timeout;
  // The answer of a call to another node is read by the waiting thread itself when the transport
  // can (no hand-over from the io thread), unless this thread serves a call (the io work's served
  // calls would replace its state) or a library keeps a context per thread (call hooks).
  // The transport, not the engine, is held while it waits: the last holder of an engine stops it.
  std::shared_ptr<Transport> transport;
  if (!serving_call_here() && !call_context_hooks()) {
    if (const auto engine = impl_->engine.lock(); engine && engine->self_node() != impl_->node) {
      transport = engine->transport();
    }
  }
  if (transport) {
    auto done = [this] { return impl_->done.load(std::memory_order_acquire); };
    const std::uint64_t settled_before = replies_settled_here();
    const auto in_time =
        transport->wait_running_io(done, impl_->completed, impl_->would_run, deadline, false);
    if (in_time) {
      if (!*in_time) {
        return false;
      }
      // As below, unless its run read more answers than its own: then it takes those next and
      // calls again, and its calls go out together at its next wait (the mesh defers them).
      if (replies_settled_here() - settled_before <= 1) {
        grant_inline_write();
      }
      return true;
    }
  }
  for (;;) {
    const std::uint32_t seen = impl_->completed.value();
    if (impl_->done.load(std::memory_order_acquire)) {
      break;
    }
    if (!impl_->completed.wait(seen, deadline) && !impl_->done.load(std::memory_order_acquire)) {
      return false;
    }
  }
  grant_inline_write();  // a reply to what came is written by this thread (as after Waiter::wait)
  return true;
}

bool CallState::done() const noexcept { return impl_->done.load(std::memory_order_acquire); }

void CallState::rethrow_if_failed() const {
  std::unique_lock lock(impl_->mutex, std::defer_lock);
  if (!impl_->done.load(std::memory_order_acquire)) {
    lock.lock();  // not done yet (a caller that did not wait): read under the lock
  }
  if (const auto& e = impl_->rpc_error) {
    throw RpcError(e->kind, e->node, e->function, e->reason, e->hint);
  }
  if (impl_->error) {
    std::rethrow_exception(impl_->error);
  }
}

PackedArgs CallState::result_view() const {
  return impl_->reply && impl_->reply->packed ? impl_->reply->result : PackedArgs{};
}

EventArgs CallState::result_args() const {
  if (!impl_->reply) {
    return EventArgs{};
  }
  const auto& r = *impl_->reply;
  return rpc_wire::drop_first_args(r.args ? *r.args : r.packed->unpack(), 2);  // after id and status
}

const std::shared_ptr<void>& CallState::local_value() const noexcept { return impl_->local; }

void CallState::on_done(std::function<void()> fn) {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->done) {
      impl_->callbacks.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

void CallState::complete_local(std::shared_ptr<void> value) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->done) {
      return;
    }
    impl_->local = std::move(value);
    impl_->done.store(true, std::memory_order_release);
    callbacks.swap(impl_->callbacks);
  }
  impl_->completed.wake_all();
  for (auto& fn : callbacks) {
    fn();
  }
}

void CallState::fail(std::exception_ptr error) { impl_->complete_error(std::move(error), false); }

std::int64_t CallState::node() const noexcept { return impl_->node; }
const std::string& CallState::function() const noexcept { return impl_->function; }

void throw_bad_result(const CallState& state, const std::string& reason) {
  throw RpcError(RpcError::Kind::bad_result, state.node(), state.function(),
                 "the result does not convert to the type asked for: " + reason,
                 "give call<R>() the type the function returns");
}

std::vector<std::function<void()>> CallState::Impl::finish_locked() {
  done.store(true, std::memory_order_release);
  std::vector<std::function<void()>> out;
  out.swap(callbacks);
  return out;
}

void CallState::Impl::run(std::vector<std::function<void()>> list, bool posted) {
  completed.wake_all();
  for (auto& fn : list) {
    if (posted) {
      post_callback(engine, std::move(fn));
    } else {
      fn();
    }
  }
}

bool CallState::Impl::settle(RemoteEvent&& e, const PackedArgs& result, std::vector<std::function<void()>>& to_run) {
  std::lock_guard lock(mutex);
  if (done) {
    return false;
  }
  reply.emplace(Reply{std::move(e.packed), std::move(e.args), result});  // the bytes move, not their address
  to_run = finish_locked();
  return true;
}

bool CallState::Impl::complete_error(std::exception_ptr e, bool posted) {
  std::vector<std::function<void()>> list;
  {
    std::lock_guard lock(mutex);
    if (done) {
      return false;
    }
    try {
      std::rethrow_exception(e);
    } catch (const RpcError& rpc) {
      rpc_error = RpcErrorParts{rpc.kind(), rpc.node(), rpc.function(), rpc.reason(), rpc.hint()};
    } catch (...) {
      error = std::move(e);
    }
    list = finish_locked();
  }
  run(std::move(list), posted);
  return true;
}

}  // namespace detail
}  // namespace ditask
