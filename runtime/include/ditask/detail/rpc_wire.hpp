// SPDX-License-Identifier: MIT
// The runtime's side of a remote call that rpc.hpp's templates use inline: starting a call,
// sending it, serving one and replying. Not for modules to call directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ditask/event_args.hpp"
#include "ditask/export.hpp"
#include "ditask/handler.hpp"
#include "ditask/detail/packed_args.hpp"
#include "ditask/rpc_callee.hpp"
#include "ditask/rpc_future.hpp"

namespace ditask {

namespace detail {

// ---- the caller's side (implemented in the runtime) ----

/// A call being made: its state, its id on the wire (0 when it failed before it was sent), and
/// the call context a library sends with it (CallContextHooks; empty when none).
struct OutgoingCall {
  std::shared_ptr<CallState> state;
  std::uint64_t id = 0;
  std::vector<std::uint8_t> context;
};

/// A library's context that travels with each remote call made on a thread and is current on
/// the callee while it serves the call (the distributed autograd context of ditask::torch).
struct CallContextHooks {
  /// On the calling thread, as a call to node `to` is made: the bytes to send with it (empty:
  /// none). Must not throw.
  std::function<std::vector<std::uint8_t>(std::int64_t to)> capture;
  /// On the serving thread, before the call's arguments convert: what capture() gave, and the
  /// caller. Must not throw.
  std::function<void(std::span<const std::uint8_t> context, std::int64_t caller)> restore;
};
/// Sets this process's hooks (one library's; a later call replaces them). Call it before any
/// call is made or served (as a library loads).
DITASK_API void set_call_context_hooks(CallContextHooks hooks);
/// Starts a call on `to` (the function and object travel in its payload); `display` names it in
/// errors. Fails the state at once when the callee is not connected or the task stopped.
DITASK_API OutgoingCall begin_call(const Callee& to, std::string_view display);
/// Sends a started call whose payload is `wire` (detail::pack_event of id, function, object,
/// arguments...).
DITASK_API void send_call_packed(const OutgoingCall& call, const std::vector<std::uint8_t>& wire);
/// Sends a started call whose arguments are JSON (id, function, object first).
DITASK_API void send_call_args(const OutgoingCall& call, EventArgs args);
/// Fails a started call that could not be sent (its arguments did not encode).
DITASK_API void abort_call(const OutgoingCall& call, std::exception_ptr error) noexcept;

/// Makes a call: packs the arguments (the fast path for simple ones) and sends it.
template <class R, class... A>
Future<R> make_call(const Callee& to, std::uint64_t object, std::string_view function, std::string_view display,
                    A&&... args) {
  OutgoingCall call = begin_call(to, display);
  if (call.id != 0) {
    try {
      if constexpr ((is_packable_v<A> && ...)) {
        auto& wire = pack_buffer();
        pack_event(wire, call.id, function, object, call.context, args...);
        send_call_packed(call, wire);
      } else {
        send_call_args(call, EventArgs::from(call.id, std::string(function), object, call.context,
                                             std::forward<A>(args)...));
      }
    } catch (...) {
      abort_call(call, std::current_exception());
    }
  }
  return Future<R>(call.state);
}

// ---- the callee's side ----

/// The id of the call this thread serves now (its reply's header).
DITASK_API std::uint64_t serving_call_id() noexcept;
/// The node the call or answer whose arguments this thread encodes now goes to (a library's
/// value types record it, as RRefs do), or -2 while none is being encoded.
DITASK_API std::int64_t encoding_destination() noexcept;
/// What a library ties to the call this thread serves (the distributed autograd context its
/// arguments came in): set while the arguments convert, dropped by the runtime once the call's
/// answer was sent. Empty on a thread that serves no call. Thread: this thread's own.
DITASK_API std::shared_ptr<void>& served_call_state() noexcept;
/// The object a method call runs on (set while a method runs).
DITASK_API void* serving_object() noexcept;
/// Marks that the arguments converted and the function itself runs: what it throws from now on
/// is the function's exception, not a mismatch of arguments.
DITASK_API void enter_user_code() noexcept;
/// The reply of the call this thread serves is encoded from now on: the handles (RRefs) in it
/// are registered for its caller. Anywhere else in the function a handle is refused, as in an
/// event; a reply that fails to encode takes its registrations back.
DITASK_API void begin_reply() noexcept;
/// Sends the reply of the call being served: `wire` is pack_event(id, 0, result?).
DITASK_API void reply_packed(const std::vector<std::uint8_t>& wire);
/// The same for a result that is JSON (args: id, 0, result).
DITASK_API void reply_args(EventArgs args);

/// Replies with `value` (the fast path for a simple type).
template <class V>
void reply_with(V&& value) {
  begin_reply();
  if constexpr (is_packable_v<V>) {
    auto& wire = pack_buffer();
    pack_event(wire, serving_call_id(), std::uint8_t{0}, value);
    reply_packed(wire);
  } else {
    reply_args(EventArgs::from(serving_call_id(), std::uint8_t{0}, std::forward<V>(value)));
  }
}
/// Replies with no value (a void function).
inline void reply_void() {
  auto& wire = pack_buffer();
  pack_event(wire, serving_call_id(), std::uint8_t{0});
  reply_packed(wire);
}

/// `fn` with parameters P... as a handler that replies with fn's result.
template <class Fn, class... P>
auto rpc_body(Fn fn, std::tuple<P...>*) {
  return [fn = std::move(fn)](P... p) mutable {
    enter_user_code();
    using R = std::invoke_result_t<Fn&, P...>;
    if constexpr (std::is_void_v<R>) {
      fn(std::forward<P>(p)...);
      reply_void();
    } else {
      reply_with(fn(std::forward<P>(p)...));
    }
  };
}
/// A function as the runtime calls it: the handler forms of on(), replying with the result.
template <class F>
Handlers make_rpc_handlers(F&& fn) {
  check_handler_type<F>();
  using Fn = std::decay_t<F>;
  using Params = typename callable_traits<Fn>::params;
  return make_handlers(rpc_body(Fn(std::forward<F>(fn)), static_cast<Params*>(nullptr)));
}
/// Method `m` of T (with parameters P...) as a function of the serving object.
template <class T, class M, class... P>
auto method_body(M m, std::tuple<P...>*) {
  return [m](P... p) -> decltype(auto) { return (static_cast<T*>(serving_object())->*m)(std::forward<P>(p)...); };
}

}  // namespace detail

}  // namespace ditask
