// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "ditask/context.hpp"
#include "ditask/export.hpp"

namespace ditask {

/// The part of a middleware that runs after the rest of the chain (the code after DI-engine's
/// `yield`). An empty Backward means "nothing to do afterwards".
using Backward = std::function<void()>;

/// One middleware in its two-phase form: the body is the forward part, the returned Backward
/// runs after every later middleware of the step (in reverse order). A middleware written as
/// `void(Context&)` has no backward part; Task::use accepts both shapes.
using Middleware = std::function<Backward(Context&)>;

/// Wraps a middleware in another (DI-engine's `use_wrapper`, e.g. a step timer).
using Wrapper = std::function<Middleware(Middleware)>;

/// A FIFO lock for middleware: Task::use(fn, lock) serialises every middleware given the same
/// lock, in the order their forwards were started (registration order within a step), even in
/// async mode. Copies share one lock. Thread: any.
class DITASK_API Lock {
 public:
  /// A new, unlocked lock.
  Lock();
  /// Takes a place in the queue now; pass it to acquire() later, from any thread.
  std::uint64_t take_ticket() const;
  /// Blocks until `ticket` is served, then holds the lock until release().
  void acquire(std::uint64_t ticket) const;
  /// Releases the lock held by the current ticket and serves the next one.
  void release() const;
  /// True when both handles share one lock.
  bool operator==(const Lock& other) const noexcept { return state_ == other.state_; }

 private:
  struct State;
  std::shared_ptr<State> state_;
};

namespace detail {

/// Turns `void(Context&)` or `R(Context&)` (R convertible to Backward) into a Middleware.
template <class F>
Middleware to_middleware(F&& fn) {
  using R = std::invoke_result_t<std::decay_t<F>&, Context&>;
  if constexpr (std::is_void_v<R>) {
    return [f = std::forward<F>(fn)](Context& ctx) mutable -> Backward {
      f(ctx);
      return {};
    };
  } else {
    static_assert(std::is_convertible_v<R, Backward>,
                  "ditask: a middleware returns void or a callable void() (its backward part)");
    return [f = std::forward<F>(fn)](Context& ctx) mutable -> Backward { return Backward(f(ctx)); };
  }
}

}  // namespace detail
}  // namespace ditask
