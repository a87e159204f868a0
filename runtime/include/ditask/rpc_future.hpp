// SPDX-License-Identifier: MIT
#pragma once

/// The result of a remote call (ditask::Future, as torch.futures.Future) and how a call fails
/// (ditask::RpcError). docs/rpc.md.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ditask/error.hpp"
#include "ditask/event_args.hpp"
#include "ditask/export.hpp"
#include "ditask/detail/packed_args.hpp"

namespace ditask {

/// A remote call that failed: what went wrong, on which node, in which function. Thrown by
/// Future::get() and Rpc::call().
class DITASK_API RpcError : public Error {
 public:
  /// Why the call failed.
  enum class Kind {
    remote_exception,  ///< the function threw on the callee (message: its what())
    unknown_function,  ///< no function (or method, or class) of that name on the callee
    bad_arguments,     ///< the arguments do not fit the function's parameters
    bad_result,        ///< the result does not convert to the type the caller asked for
    unknown_object,    ///< the remote object is gone (its owner restarted, or it was released)
    node_left,         ///< the callee left (died, disconnected, stopped) before it answered
    not_connected,     ///< the callee is not connected (it left earlier, or is no peer)
    timeout,           ///< no answer within the call's timeout (a late answer is dropped)
    stopped,           ///< this node's task stopped (or is not running)
  };
  /// `what()` is "call '<function>' on node <node> failed: <message>".
  RpcError(Kind kind, std::int64_t node, std::string function, std::string message, std::string hint = {});
  /// Why it failed.
  Kind kind() const noexcept { return kind_; }
  /// The callee's node id (-1 when no node was chosen).
  std::int64_t node() const noexcept { return node_; }
  /// The function (or "<Class>.<method>") that was called.
  const std::string& function() const noexcept { return function_; }
  /// The reason alone, without the call's description (a remote exception's what()).
  const std::string& reason() const noexcept { return reason_; }
  /// The kind's name as written in the enum ("remote_exception", "timeout", ...).
  static const char* kind_name(Kind kind) noexcept;

 private:
  Kind kind_;
  std::int64_t node_;
  std::string function_;
  std::string reason_;
};

namespace detail {

/// The shared state of one Future: the reply of a remote call as it came (read by
/// Future::get()), an error, or a value completed locally (a then() continuation).
/// Thread: any.
class DITASK_API CallState {
 public:
  struct Impl;
  CallState();
  ~CallState();
  CallState(const CallState&) = delete;
  CallState& operator=(const CallState&) = delete;

  /// Waits until it completes (true) or `timeout` passes (false).
  bool wait(std::chrono::milliseconds timeout) const;
  /// True once completed (with a result or an error).
  bool done() const noexcept;
  /// Throws the error it completed with (an RpcError, or a continuation's exception); returns
  /// when it completed with a result. Call after wait().
  void rethrow_if_failed() const;
  /// The positional values of the reply (after its header), still packed.
  PackedArgs result_view() const;
  /// The same values as JSON.
  EventArgs result_args() const;
  /// The value of a locally completed state (null for a remote reply).
  const std::shared_ptr<void>& local_value() const noexcept;
  /// Runs `fn` once it completes: now on this thread when it already has, else on a runtime
  /// thread (never the transport's io thread).
  void on_done(std::function<void()> fn);
  /// Completes it with a local value (a continuation's result); runs its callbacks here.
  void complete_local(std::shared_ptr<void> value);
  /// Completes it with an error; runs its callbacks here.
  void fail(std::exception_ptr error);
  /// The node and the function of the call (for errors of its continuations).
  std::int64_t node() const noexcept;
  const std::string& function() const noexcept;
  /// The runtime's side of the state.
  Impl& impl() noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Throws RpcError(bad_result) for the call of `state`, saying `reason`.
[[noreturn]] DITASK_API void throw_bad_result(const CallState& state, const std::string& reason);

/// The reply's one value as R: straight from the packed bytes for a simple R, else via JSON.
/// Errors: RpcError(bad_result) when it returned nothing or something R cannot hold.
template <class R>
R convert_result(const CallState& state) {
  static_assert(!is_bytes_view_v<R>,
                "ditask: a call's result cannot be a std::span view (the reply's bytes go with the call): "
                "use std::vector<std::uint8_t>");
  if constexpr (is_unpackable_v<R>) {
    const PackedArgs view = state.result_view();
    if (view.count == 1) {
      R out{};
      const std::uint8_t* p = view.data;
      if (unpack_value(p, view.end, out)) {
        return out;
      }
    }
  }
  const EventArgs reply = state.result_args();
  if (reply.args.size() != 1) {
    throw_bad_result(state, "the function returned nothing");
  }
  try {
    return from_arg<R>(reply.args[0]);
  } catch (const json::exception& e) {
    throw_bad_result(state, e.what());
  }
}

}  // namespace detail

/// The result of Rpc::call_async(): wait for it, poll it, chain it (then), or wait for many
/// (wait_all). Copies share one state. Thread: any.
template <class R>
class Future {
 public:
  using value_type = R;
  Future() = default;
  /// Wraps a call's state (made by the runtime).
  explicit Future(std::shared_ptr<detail::CallState> state) : state_(std::move(state)) {}

  /// False for a default-constructed Future.
  bool valid() const noexcept { return state_ != nullptr; }
  /// True once the call answered or failed (never blocks).
  bool done() const noexcept { return state_->done(); }
  /// Waits up to `timeout`; true when done. (The call's own timeout fails it in any case.)
  bool wait_for(std::chrono::milliseconds timeout) const { return state_->wait(timeout); }
  /// Waits and returns the result. Errors: RpcError (or a then() continuation's exception).
  R get() const {
    state_->wait(std::chrono::milliseconds::max());
    state_->rethrow_if_failed();
    if constexpr (std::is_void_v<R>) {
      return;
    } else {
      if (const auto& local = state_->local_value()) {
        return *static_cast<const R*>(local.get());
      }
      return detail::convert_result<R>(*state_);
    }
  }
  /// get(), as torch.futures.Future.wait() is named.
  R wait() const { return get(); }
  /// A Future of `fn(*this)`, called once this one is done (with a result or an error: call
  /// get() inside to see which). `fn` runs on a runtime thread, or here when already done; an
  /// exception from it fails the returned Future.
  template <class F>
  auto then(F&& fn) const {
    using U = std::invoke_result_t<std::decay_t<F>&, const Future<R>&>;
    auto next = std::make_shared<detail::CallState>();
    state_->on_done([self = *this, next, f = std::decay_t<F>(std::forward<F>(fn))]() mutable {
      try {
        if constexpr (std::is_void_v<U>) {
          f(self);
          next->complete_local(std::make_shared<char>(0));
        } else {
          next->complete_local(std::make_shared<U>(f(self)));
        }
      } catch (...) {
        next->fail(std::current_exception());
      }
    });
    return Future<U>(std::move(next));
  }
  /// The shared state (for the runtime).
  const std::shared_ptr<detail::CallState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::CallState> state_;
};

/// Waits for every future, then returns their results in order (torch.futures.wait_all).
/// Errors: the first failed future's error, after all are done.
template <class R>
auto wait_all(const std::vector<Future<R>>& futures) {
  for (const auto& f : futures) {
    f.wait_for(std::chrono::milliseconds::max());
  }
  if constexpr (std::is_void_v<R>) {
    for (const auto& f : futures) {
      f.get();
    }
  } else {
    std::vector<R> out;
    out.reserve(futures.size());
    for (const auto& f : futures) {
      out.push_back(f.get());
    }
    return out;
  }
}

}  // namespace ditask
