// SPDX-License-Identifier: MIT
// How a typed handler is erased into one that takes an event's arguments and its sender: the
// mechanism behind Task::on and Rpc::define. Modules include ditask/handler.hpp (or task.hpp),
// never this file.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ditask/detail/packed_args.hpp"
#include "ditask/event_args.hpp"
#include "ditask/event_meta.hpp"

namespace ditask {

namespace detail {

/// A handler after type erasure: the arguments of one event and who sent it.
using ErasedHandler = std::function<void(const EventArgs&, const EventMeta&)>;

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

/// True when the last parameter is EventMeta (by value or reference): the handler is told who
/// sent the event.
template <class Params>
constexpr bool last_is_meta() {
  constexpr std::size_t n = std::tuple_size_v<Params>;
  if constexpr (n > 0) {
    return std::is_same_v<std::decay_t<std::tuple_element_t<n - 1, Params>>, EventMeta>;
  } else {
    return false;
  }
}

/// The parameters an event's arguments fill: all of them, or all but a trailing EventMeta.
template <class Params, class Seq>
struct take_prefix;
template <class Params, std::size_t... I>
struct take_prefix<Params, std::index_sequence<I...>> {
  using type = std::tuple<std::tuple_element_t<I, Params>...>;
};
template <class Params>
using argument_params_t =
    typename take_prefix<Params, std::make_index_sequence<std::tuple_size_v<Params> - (last_is_meta<Params>() ? 1 : 0)>>::type;

/// Calls `f` with the converted arguments, then `meta` when F takes it (as its last parameter).
template <class F>
struct WithMeta {
  F& f;
  const EventMeta& meta;
  template <class... A>
  void operator()(A&&... a) {
    if constexpr (last_is_meta<typename callable_traits<F>::params>()) {
      f(std::forward<A>(a)..., meta);
    } else {
      f(std::forward<A>(a)...);
    }
  }
};

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

/// Compile-time check that F can be a handler.
template <class F>
constexpr void check_handler_type() {
  static_assert(is_typed_callable_v<F>,
                "ditask: a handler must be a callable with concrete parameter types "
                "(generic lambdas with 'auto' parameters cannot be matched against event arguments)");
}

/// Calls `f` (whose parameter types are Params) with the arguments of one event, converted.
/// Errors: ditask::Error when the arity or the named arguments do not fit, or a conversion fails.
template <class Params, class Fn>
void call_raw(Fn& f, const EventArgs& a) {
  constexpr std::size_t n = std::tuple_size_v<Params>;
  constexpr bool takes_kwargs = last_is_kwargs<Params>();
  constexpr std::size_t positional = takes_kwargs ? n - 1 : n;
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
}

/// Wraps `fn(P...)` so it can be called with EventArgs and the sender. Rules: a single
/// `const EventArgs&` parameter gets everything; otherwise each parameter takes one positional
/// argument, and a last parameter of type `const Kwargs&` takes the named ones. Either form may
/// end with a `const EventMeta&` parameter, which gets the sender.
template <class F>
ErasedHandler make_raw_handler(F&& fn) {
  check_handler_type<F>();
  using Fn = std::decay_t<F>;
  using Params = argument_params_t<typename callable_traits<Fn>::params>;
  return [f = Fn(std::forward<F>(fn))](const EventArgs& a, const EventMeta& meta) mutable {
    WithMeta<Fn> call{f, meta};
    if constexpr (takes_raw_args<Params>()) {
      call(a);
    } else {
      call_raw<Params>(call, a);
    }
  };
}

/// True when every parameter is a simple type the fast path reads (no EventArgs, no Kwargs).
template <class Params, std::size_t... I>
constexpr bool all_unpackable(std::index_sequence<I...>) {
  return (is_unpackable_v<std::decay_t<std::tuple_element_t<I, Params>>> && ...);
}

template <class Values, class Fn, std::size_t... I>
bool call_packed(Fn&& f, const PackedArgs& a, std::index_sequence<I...>) {
  if (a.count != sizeof...(I) || a.named_count != 0) {
    return false;
  }
  Values values;
  if constexpr (sizeof...(I) > 0) {
    const std::uint8_t* p = a.data;
    if (!(unpack_value(p, a.end, std::get<I>(values)) && ...)) {
      return false;
    }
  }
  f(std::move(std::get<I>(values))...);
  return true;
}

/// A handler in both erased forms: `raw` takes EventArgs (always set); `packed` reads simple
/// arguments straight from the wire (set only when every parameter is a simple type).
struct Handlers {
  ErasedHandler raw;
  PackedHandler packed;
};

/// make_raw_handler(fn), plus the fast path when `fn`'s parameters allow it; both share `fn`.
template <class F>
Handlers make_handlers(F&& fn) {
  check_handler_type<F>();
  using Fn = std::decay_t<F>;
  using Params = argument_params_t<typename callable_traits<Fn>::params>;
  constexpr std::size_t n = std::tuple_size_v<Params>;
  if constexpr (all_unpackable<Params>(std::make_index_sequence<n>{})) {
    auto shared = std::make_shared<Fn>(std::forward<F>(fn));
    using Values = typename decayed_prefix<Params, std::make_index_sequence<n>>::type;
    PackedHandler packed = [shared](const PackedArgs& a, const EventMeta& meta) {
      return call_packed<Values>(WithMeta<Fn>{*shared, meta}, a, std::make_index_sequence<n>{});
    };
    ErasedHandler raw = [shared](const EventArgs& a, const EventMeta& meta) {
      WithMeta<Fn> call{*shared, meta};
      call_raw<Params>(call, a);
    };
    return Handlers{std::move(raw), std::move(packed)};
  } else {
    return Handlers{make_raw_handler(std::forward<F>(fn)), nullptr};
  }
}

}  // namespace detail
}  // namespace ditask
