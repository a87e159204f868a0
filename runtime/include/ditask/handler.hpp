// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ditask/event_args.hpp"

namespace ditask {

/// A handler after type erasure: it receives the raw arguments of one event.
using RawHandler = std::function<void(const EventArgs&)>;

namespace detail {

template <class F>
struct callable_traits : callable_traits<decltype(&std::decay_t<F>::operator())> {};
template <class R, class... P>
struct callable_traits<R (*)(P...)> {
  using params = std::tuple<P...>;
};
template <class R, class... P>
struct callable_traits<R(P...)> : callable_traits<R (*)(P...)> {};
template <class C, class R, class... P>
struct callable_traits<R (C::*)(P...)> : callable_traits<R (*)(P...)> {};
template <class C, class R, class... P>
struct callable_traits<R (C::*)(P...) const> : callable_traits<R (*)(P...)> {};
template <class C, class R, class... P>
struct callable_traits<R (C::*)(P...) noexcept> : callable_traits<R (*)(P...)> {};
template <class C, class R, class... P>
struct callable_traits<R (C::*)(P...) const noexcept> : callable_traits<R (*)(P...)> {};

template <class F, class = void>
struct has_call_operator : std::false_type {};
template <class F>
struct has_call_operator<F, std::void_t<decltype(&std::decay_t<F>::operator())>> : std::true_type {};

template <class F>
inline constexpr bool is_typed_callable_v =
    std::is_function_v<std::remove_pointer_t<std::decay_t<F>>> || has_call_operator<F>::value;

/// Throws ditask::Error for a handler whose arity or named-argument support does not fit.
[[noreturn]] DITASK_API void throw_arity_error(std::size_t expected, std::size_t got);
[[noreturn]] DITASK_API void throw_unexpected_kwargs(const json& kwargs);

template <class Params, class Seq>
struct decayed_prefix;
template <class Params, std::size_t... I>
struct decayed_prefix<Params, std::index_sequence<I...>> {
  using type = std::tuple<std::decay_t<std::tuple_element_t<I, Params>>...>;
};

template <class Tuple, std::size_t... I>
Tuple convert_positional(const EventArgs& a, std::index_sequence<I...>) {
  return Tuple{a.get<std::decay_t<std::tuple_element_t<I, Tuple>>>(I)...};
}

/// True when the parameter list is exactly one EventArgs (by value or reference).
template <class Params>
constexpr bool takes_raw_args() {
  if constexpr (std::tuple_size_v<Params> == 1) {
    return std::is_same_v<std::decay_t<std::tuple_element_t<0, Params>>, EventArgs>;
  } else {
    return false;
  }
}

/// True when the last parameter is Kwargs (by value or reference).
template <class Params>
constexpr bool last_is_kwargs() {
  constexpr std::size_t n = std::tuple_size_v<Params>;
  if constexpr (n > 0) {
    return std::is_same_v<std::decay_t<std::tuple_element_t<n - 1, Params>>, Kwargs>;
  } else {
    return false;
  }
}

/// Wraps `fn(P...)` so it can be called with EventArgs. Rules: a single `const EventArgs&`
/// parameter gets everything; otherwise each parameter takes one positional argument, and a
/// last parameter of type `const Kwargs&` takes the named ones.
template <class F>
RawHandler make_raw_handler(F&& fn) {
  static_assert(is_typed_callable_v<F>,
                "ditask: a handler must be a callable with concrete parameter types "
                "(generic lambdas with 'auto' parameters cannot be matched against event arguments)");
  using Params = typename callable_traits<std::decay_t<F>>::params;
  constexpr std::size_t n = std::tuple_size_v<Params>;
  if constexpr (takes_raw_args<Params>()) {
    return RawHandler(std::forward<F>(fn));
  } else {
    constexpr bool takes_kwargs = last_is_kwargs<Params>();
    constexpr std::size_t positional = takes_kwargs ? n - 1 : n;
    return [f = std::forward<F>(fn)](const EventArgs& a) mutable {
      if (a.args.size() != positional) {
        throw_arity_error(positional, a.args.size());
      }
      if constexpr (!takes_kwargs) {
        if (!a.kwargs.empty()) {
          throw_unexpected_kwargs(a.kwargs);
        }
      }
      using Values = typename decayed_prefix<Params, std::make_index_sequence<positional>>::type;
      auto values = convert_positional<Values>(a, std::make_index_sequence<positional>{});
      if constexpr (takes_kwargs) {
        std::apply([&](auto&... v) { f(std::move(v)..., a.named()); }, values);
      } else {
        std::apply([&](auto&... v) { f(std::move(v)...); }, values);
      }
    };
  }
}

}  // namespace detail
}  // namespace ditask
