// SPDX-License-Identifier: MIT
#pragma once

/// Remote calls between the nodes of a job: functions (define / call / call_async), remote
/// objects (define_class / remote / local_ref / RRef), as torch.distributed.rpc offers them.
/// docs/rpc.md.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
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
#include "ditask/packed_args.hpp"
#include "ditask/rpc_future.hpp"
#include "ditask/rref.hpp"

namespace ditask {

/// Where a call goes: a node id, or the one connected node (this one included) with a role or
/// label; and how long the call may take (Rpc::default_timeout() unless set).
struct Callee {
  /// Node `node`.
  Callee(std::int64_t id) : node(id) {}  // NOLINT: implicit, so call(1, ...) reads naturally
  /// The one node with role `name` (--roles).
  static Callee role(std::string_view name) { return label("role." + std::string(name)); }
  /// The one node with a label matching the fnmatch glob `pattern`.
  static Callee label(std::string pattern) {
    Callee c(-1);
    c.node.reset();
    c.label_pattern = std::move(pattern);
    return c;
  }
  /// This callee with a timeout for the call.
  Callee within(std::chrono::milliseconds limit) const {
    Callee c = *this;
    c.timeout = limit;
    return c;
  }

  std::optional<std::int64_t> node;
  std::string label_pattern;
  std::optional<std::chrono::milliseconds> timeout;
};

/// Counters of this node's calls since its task started.
struct RpcStats {
  std::uint64_t calls = 0;          ///< calls made (to other nodes and to itself)
  std::uint64_t answered = 0;       ///< of those, answered with a result
  std::uint64_t failed = 0;         ///< of those, failed (any RpcError kind)
  std::uint64_t timed_out = 0;      ///< of the failed, by their timeout
  std::uint64_t late_replies = 0;   ///< answers that came after their call had failed (dropped)
  std::uint64_t served = 0;         ///< calls this node ran for others (and itself)
  std::uint64_t objects = 0;        ///< objects this node owns now
  std::uint64_t handles = 0;        ///< handles to other nodes' objects this node holds now
};

namespace detail {

// ---- the caller's side (implemented in the runtime) ----

/// A call being made: its state, and its id on the wire (0 when it failed before it was sent).
struct OutgoingCall {
  std::shared_ptr<CallState> state;
  std::uint64_t id = 0;
};
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
        pack_event(wire, call.id, function, object, args...);
        send_call_packed(call, wire);
      } else {
        send_call_args(call, EventArgs::from(call.id, std::string(function), object, std::forward<A>(args)...));
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
/// The object a method call runs on (set while a method runs).
DITASK_API void* serving_object() noexcept;
/// Marks that the arguments converted and the function itself runs: what it throws from now on
/// is the function's exception, not a mismatch of arguments.
DITASK_API void enter_user_code() noexcept;
/// Sends the reply of the call being served: `wire` is pack_event(id, 0, result?).
DITASK_API void reply_packed(const std::vector<std::uint8_t>& wire);
/// The same for a result that is JSON (args: id, 0, result).
DITASK_API void reply_args(EventArgs args);

/// Replies with `value` (the fast path for a simple type).
template <class V>
void reply_with(V&& value) {
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

template <class T>
class ClassDef;

/// The remote-call layer of this process (one per process, like task()). Define functions and
/// classes before task().start(), so that they exist when peers call. Thread: any.
///
/// Execution. The calls one caller makes run on the callee one at a time, in the order they
/// were made (FIFO per caller, on one thread per caller); calls of a function defined with
/// define_concurrent() run at once on a pool. A function may make calls itself (nested calls):
/// only a call back into the same caller's queue waits behind the call that made it.
class DITASK_API Rpc {
 public:
  /// Defines function `name` (replaces one of that name). `fn` takes typed parameters (as an
  /// on() handler, optionally ending with `const EventMeta&`: who called) and returns the result
  /// (or void).
  template <class F>
  void define(std::string name, F&& fn) {
    define_entry(std::move(name), detail::make_rpc_handlers(std::forward<F>(fn)), false);
  }
  /// define(), but the calls run concurrently on a pool instead of FIFO per caller.
  template <class F>
  void define_concurrent(std::string name, F&& fn) {
    define_entry(std::move(name), detail::make_rpc_handlers(std::forward<F>(fn)), true);
  }
  /// Removes function `name`; false when there was none.
  bool undefine(std::string_view name);
  /// Defines class T under `name` (the same on every node): add its constructor and methods
  /// to the result.
  template <class T>
  ClassDef<T> define_class(std::string name);

  /// Calls `function` on `to` and returns at once (rpc_async).
  template <class R = void, class... A>
  Future<R> call_async(const Callee& to, std::string_view function, A&&... args) {
    return detail::make_call<R>(to, 0, function, function, std::forward<A>(args)...);
  }
  /// Calls `function` on `to` and waits for its result (rpc_sync). Errors: RpcError.
  template <class R = void, class... A>
  R call(const Callee& to, std::string_view function, A&&... args) {
    return call_async<R>(to, function, std::forward<A>(args)...).get();
  }
  /// Creates a T on `to` with its constructor's arguments and returns at once (remote).
  template <class T, class... A>
  Future<RRef<T>> remote_async(const Callee& to, A&&... args) {
    const std::string function = "new " + detail::class_name_of(typeid(T));
    return detail::make_call<RRef<T>>(to, 0, function, function, std::forward<A>(args)...);
  }
  /// Creates a T on `to` and waits for its handle. Errors: RpcError.
  template <class T, class... A>
  RRef<T> remote(const Callee& to, A&&... args) {
    return remote_async<T>(to, std::forward<A>(args)...).get();
  }
  /// A handle others can call to `object`, one of this node's own (PyTorch's RRef(self)).
  /// Errors: ditask::Error when T was not defined or the task is not running in a worker.
  template <class T>
  RRef<T> local_ref(std::shared_ptr<T> object) {
    return RRef<T>(detail::adopt_object(std::move(object), typeid(T)));
  }

  /// The timeout of calls whose Callee sets none (60 s at first).
  void set_default_timeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds default_timeout() const;
  /// Counters of the running task's calls (all zero when not running).
  RpcStats stats() const;

 private:
  template <class T>
  friend class ClassDef;
  void define_entry(std::string name, detail::Handlers handlers, bool concurrent);
  void define_class_entry(const std::type_info& type, const std::string& name);
  void define_method(const std::string& class_name, std::string method, detail::Handlers handlers,
                     bool concurrent);
};

/// The process-wide Rpc. Thread: any.
DITASK_API Rpc& rpc();

/// Adds the constructor and methods of a class defined with Rpc::define_class.
template <class T>
class ClassDef {
 public:
  ClassDef(Rpc& rpc, std::string name) : rpc_(rpc), name_(std::move(name)) {}
  /// The constructor remote() calls, with parameters A...
  template <class... A>
  ClassDef& constructor() {
    rpc_.define_entry("new " + name_, detail::make_rpc_handlers([](A... a) {
                        return RRef<T>(detail::adopt_object(std::make_shared<T>(std::move(a)...), typeid(T)));
                      }),
                      false);
    return *this;
  }
  /// Method `name` (a member function pointer); `concurrent` as Rpc::define_concurrent.
  template <class M>
  ClassDef& method(std::string name, M m, bool concurrent = false) {
    using Params = typename detail::callable_traits<M>::params;
    rpc_.define_method(name_, std::move(name),
                       detail::make_rpc_handlers(detail::method_body<T>(m, static_cast<Params*>(nullptr))),
                       concurrent);
    return *this;
  }

 private:
  Rpc& rpc_;
  std::string name_;
};

template <class T>
ClassDef<T> Rpc::define_class(std::string name) {
  define_class_entry(typeid(T), name);
  if constexpr (std::is_constructible_v<json, const T&>) {
    define_method(name, "__to_here", detail::make_rpc_handlers([]() -> const T& {
                    return *static_cast<const T*>(detail::serving_object());
                  }),
                  false);
  }
  return ClassDef<T>(*this, std::move(name));
}

template <class T>
template <class R, class... A>
Future<R> RRef<T>::call_async(std::string_view method, A&&... args) const {
  const std::string display = record_->class_name() + "." + std::string(method);
  return detail::make_call<R>(Callee(record_->owner()), record_->id(), method, display, std::forward<A>(args)...);
}

template <class T>
template <class R, class... A>
R RRef<T>::call(std::string_view method, A&&... args) const {
  return call_async<R>(method, std::forward<A>(args)...).get();
}

template <class T>
T RRef<T>::to_here() const {
  static_assert(std::is_constructible_v<json, const T&>, "RRef::to_here needs a T that converts to and from JSON");
  if (auto object = local_value()) {
    return *object;
  }
  return call<T>("__to_here");
}

}  // namespace ditask
