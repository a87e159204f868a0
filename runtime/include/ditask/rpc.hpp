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
#include "ditask/detail/packed_args.hpp"
#include "ditask/rpc_future.hpp"
#include "ditask/rpc_callee.hpp"
#include "ditask/detail/rpc_wire.hpp"
#include "ditask/rref.hpp"

namespace ditask {


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
  /// define(), but each call runs on the thread that received it, as it arrives, once the
  /// caller's earlier calls ran (no hand-over to a queue thread: the quickest answer; the
  /// answers of calls read together go in one write). For short functions that never wait:
  /// one that waits for anything of the runtime (a call's result, an event, a group) fails with
  /// ditask::Error, and one that blocks otherwise holds up every event and call this node
  /// receives meanwhile. Its answer is never held back by a full send queue.
  template <class F>
  void define_inline(std::string name, F&& fn) {
    define_entry(std::move(name), detail::make_rpc_handlers(std::forward<F>(fn)), false, true);
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
  void define_entry(std::string name, detail::Handlers handlers, bool concurrent, bool on_arrival = false);
  void define_class_entry(const std::type_info& type, const std::string& name);
  void define_method(const std::string& class_name, std::string method, detail::Handlers handlers,
                     bool concurrent);
};

/// The process-wide Rpc. Thread: any.
DITASK_API Rpc& rpc();

namespace detail {
/// Throws ditask::Error unless `name` can name a class (not empty, no spaces).
DITASK_API void check_class_name(const std::string& name);
/// Defines class `name` for a language binding whose objects have no C++ type of their own
/// (ditask's Python package), with `constructor` as what remote() calls ("new <name>"). Its
/// objects are adopted with adopt_named_object; its methods find theirs with serving_object().
/// Errors: ditask::Error for a bad name.
DITASK_API void define_named_class(const std::string& name, Handlers constructor);
/// Adds (or replaces) method `method` of class `class_name` (defined first). Errors:
/// ditask::Error when the class is not defined.
DITASK_API void define_named_method(const std::string& class_name, std::string method, Handlers handlers,
                                    bool concurrent);
}  // namespace detail

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
