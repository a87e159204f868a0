// SPDX-License-Identifier: MIT
// The event envelope and the fast path for simple event arguments. Every event payload is the
// MessagePack map {"a": [positional...], "k": {named...}} (DI-engine's layout), written by the
// functions here and nowhere else. Positional arguments that are bools, integers, floating-point
// numbers, strings or byte vectors are written straight to it on emit and read straight from it
// in a typed handler, without a nlohmann::json value on either side; everything else takes the
// JSON path, which puts the same bytes on the wire. Versioned with the codec (msgpack.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ditask/export.hpp"
#include "ditask/event_meta.hpp"
#include "ditask/msgpack.hpp"

namespace ditask::detail::inline wire_v1 {

/// True for an argument type the fast path writes: bool, integers, floating point, strings,
/// std::vector<std::uint8_t> and std::span<const std::uint8_t>.
template <class T, class D = std::remove_cv_t<std::remove_reference_t<T>>>
inline constexpr bool is_packable_v =
    std::is_arithmetic_v<D> || std::is_same_v<D, std::string> || std::is_same_v<D, std::string_view> ||
    std::is_same_v<D, const char*> || std::is_same_v<D, char*> || std::is_same_v<D, std::vector<std::uint8_t>> ||
    std::is_same_v<D, std::span<const std::uint8_t>> ||
    (std::is_array_v<D> && std::is_same_v<std::remove_cv_t<std::remove_extent_t<D>>, char>);

/// True for a handler parameter type the fast path reads: the decayed types of is_packable_v
/// that own their value, and std::span<const std::uint8_t> (a view of the received bytes).
template <class D>
inline constexpr bool is_unpackable_v =
    std::is_arithmetic_v<D> || std::is_same_v<D, std::string> || std::is_same_v<D, std::vector<std::uint8_t>> ||
    std::is_same_v<D, std::span<const std::uint8_t>>;

/// The envelope's opening: the 2-entry map, key "a" and the header of `positional` arguments.
inline void pack_envelope_begin(Packer& p, std::size_t positional) {
  p.map(2);
  p.string("a");
  p.array(positional);
}
/// After the positional arguments: key "k" and the header of `named` arguments.
inline void pack_envelope_named(Packer& p, std::size_t named) {
  p.string("k");
  p.map(named);
}

/// Writes an event's payload, `{"a": [values...], "k": {}}`, into `out` (cleared first).
template <class... A>
void pack_event(std::vector<std::uint8_t>& out, const A&... values) {
  out.clear();
  Packer p(out);
  pack_envelope_begin(p, sizeof...(A));
  (p.value(values), ...);
  pack_envelope_named(p, 0);
}

/// A per-thread buffer for pack_event (the emit that fills it sends it before returning).
DITASK_API std::vector<std::uint8_t>& pack_buffer();

/// The positional arguments of a received event, still as MessagePack: `count` well-formed
/// values (checked when the frame arrived) from `data` up to `end`.
struct PackedArgs {
  const std::uint8_t* data = nullptr;
  const std::uint8_t* end = nullptr;
  std::size_t count = 0;
  std::size_t named_count = 0;
};

/// Reads one MessagePack value as T, advancing `p`; false (nothing consumed) when the value is
/// not of T's simple form or out of T's range: integers for integral T (and for floating-point
/// T, also floats), bool, str for std::string, bin for std::vector<std::uint8_t> and for
/// std::span<const std::uint8_t> (which then points into [p, end)).
template <class T>
bool unpack_value(const std::uint8_t*& p, const std::uint8_t* end, T& out) {
  Reader reader(p, end);
  Reader::Item item;
  if (!reader.next(item)) {
    return false;
  }
  using K = Reader::Kind;
  if constexpr (std::is_same_v<T, bool>) {
    if (item.kind != K::boolean) {
      return false;
    }
    out = item.boolean;
  } else if constexpr (std::is_arithmetic_v<T>) {
    if constexpr (std::is_floating_point_v<T>) {
      if (item.kind == K::float32 || item.kind == K::float64) {
        out = static_cast<T>(item.number);
        p = reader.position();
        return true;
      }
    }
    if (item.kind == K::positive) {
      if constexpr (std::is_integral_v<T>) {
        if (item.count > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
          return false;
        }
      }
      out = static_cast<T>(item.count);
    } else if (item.kind == K::negative) {
      if constexpr (std::is_unsigned_v<T>) {
        return false;
      } else if constexpr (std::is_integral_v<T>) {
        if (item.negative < static_cast<std::int64_t>(std::numeric_limits<T>::min())) {
          return false;
        }
      }
      out = static_cast<T>(item.negative);
    } else {
      return false;
    }
  } else if constexpr (std::is_same_v<T, std::span<const std::uint8_t>>) {
    if (item.kind != K::bin) {
      return false;
    }
    out = T(reinterpret_cast<const std::uint8_t*>(item.data), item.count);
  } else {
    constexpr bool is_string = std::is_same_v<T, std::string>;
    if (item.kind != (is_string ? K::str : K::bin)) {
      return false;
    }
    const auto* first = reinterpret_cast<const typename T::value_type*>(item.data);
    out.assign(first, first + item.count);
  }
  p = reader.position();
  return true;
}

/// A typed handler's fast path: decodes the arguments and calls the handler, or returns false
/// without calling it when an argument is not in the simple form it expects (the JSON path then
/// converts it, or reports the mismatch).
using PackedHandler = std::function<bool(const PackedArgs&, const EventMeta&)>;

}  // namespace ditask::detail::inline wire_v1
