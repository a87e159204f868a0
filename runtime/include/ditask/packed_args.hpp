// SPDX-License-Identifier: MIT
// The fast path for simple event arguments: positional arguments that are bools, integers,
// floating-point numbers, strings or byte vectors are written straight to MessagePack on emit and
// read straight from it in a typed handler, without building a nlohmann::json value on either
// side. Everything else (named arguments, JSON values, user types) takes the JSON path; both
// paths put the same bytes on the wire and give a handler the same values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ditask/export.hpp"

namespace ditask::detail {

/// True for an argument type the fast path writes: bool, integers, floating point, strings and
/// std::vector<std::uint8_t>.
template <class T, class D = std::remove_cv_t<std::remove_reference_t<T>>>
inline constexpr bool is_packable_v =
    std::is_arithmetic_v<D> || std::is_same_v<D, std::string> || std::is_same_v<D, std::string_view> ||
    std::is_same_v<D, const char*> || std::is_same_v<D, char*> || std::is_same_v<D, std::vector<std::uint8_t>> ||
    (std::is_array_v<D> && std::is_same_v<std::remove_cv_t<std::remove_extent_t<D>>, char>);

/// True for a handler parameter type the fast path reads (the decayed types of is_packable_v
/// that own their value).
template <class D>
inline constexpr bool is_unpackable_v =
    std::is_arithmetic_v<D> || std::is_same_v<D, std::string> || std::is_same_v<D, std::vector<std::uint8_t>>;

/// Appends MessagePack values to a byte vector, each in its smallest form.
class Packer {
 public:
  /// Appends to `out` (which keeps what it held).
  explicit Packer(std::vector<std::uint8_t>& out) : out_(out) {}

  /// An array header for `n` elements.
  void array(std::size_t n) { header(n, 0x90, 0xdc, 0xdd); }
  /// A map header for `n` entries.
  void map(std::size_t n) { header(n, 0x80, 0xde, 0xdf); }
  /// One value.
  template <class T>
  void value(const T& v) {
    using D = std::remove_cv_t<std::remove_reference_t<T>>;
    if constexpr (std::is_same_v<D, bool>) {
      out_.push_back(v ? 0xc3 : 0xc2);
    } else if constexpr (std::is_floating_point_v<D>) {
      double d = static_cast<double>(v);
      std::uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      out_.push_back(0xcb);
      big_endian(bits, 8);
    } else if constexpr (std::is_integral_v<D>) {
      if constexpr (std::is_signed_v<D>) {
        if (v < 0) {
          negative(static_cast<std::int64_t>(v));
          return;
        }
      }
      unsigned_int(static_cast<std::uint64_t>(v));
    } else if constexpr (std::is_same_v<D, std::vector<std::uint8_t>>) {
      header_sized(v.size(), 0xc4, 0xc5, 0xc6);
      out_.insert(out_.end(), v.begin(), v.end());
    } else {
      const std::string_view s(v);
      if (s.size() < 32) {
        out_.push_back(static_cast<std::uint8_t>(0xa0 | s.size()));
      } else {
        header_sized(s.size(), 0xd9, 0xda, 0xdb);
      }
      out_.insert(out_.end(), s.begin(), s.end());
    }
  }

 private:
  void big_endian(std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) {
      out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
  }
  void unsigned_int(std::uint64_t v) {
    if (v <= 0x7f) {
      out_.push_back(static_cast<std::uint8_t>(v));
    } else if (v <= 0xff) {
      out_.push_back(0xcc);
      big_endian(v, 1);
    } else if (v <= 0xffff) {
      out_.push_back(0xcd);
      big_endian(v, 2);
    } else if (v <= 0xffffffffULL) {
      out_.push_back(0xce);
      big_endian(v, 4);
    } else {
      out_.push_back(0xcf);
      big_endian(v, 8);
    }
  }
  void negative(std::int64_t v) {
    if (v >= -32) {
      out_.push_back(static_cast<std::uint8_t>(v));
    } else if (v >= std::numeric_limits<std::int8_t>::min()) {
      out_.push_back(0xd0);
      big_endian(static_cast<std::uint64_t>(v), 1);
    } else if (v >= std::numeric_limits<std::int16_t>::min()) {
      out_.push_back(0xd1);
      big_endian(static_cast<std::uint64_t>(v), 2);
    } else if (v >= std::numeric_limits<std::int32_t>::min()) {
      out_.push_back(0xd2);
      big_endian(static_cast<std::uint64_t>(v), 4);
    } else {
      out_.push_back(0xd3);
      big_endian(static_cast<std::uint64_t>(v), 8);
    }
  }
  // fix (up to 15), 16-bit or 32-bit count.
  void header(std::size_t n, std::uint8_t fix, std::uint8_t b16, std::uint8_t b32) {
    if (n <= 15) {
      out_.push_back(static_cast<std::uint8_t>(fix | n));
    } else {
      wide_length(n, b16, b32);
    }
  }
  // 8-, 16- or 32-bit length.
  void header_sized(std::size_t n, std::uint8_t b8, std::uint8_t b16, std::uint8_t b32) {
    if (n <= 0xff) {
      out_.push_back(b8);
      big_endian(n, 1);
    } else {
      wide_length(n, b16, b32);
    }
  }
  // 16- or 32-bit length.
  void wide_length(std::size_t n, std::uint8_t b16, std::uint8_t b32) {
    const bool short_form = n <= 0xffff;
    out_.push_back(short_form ? b16 : b32);
    big_endian(n, short_form ? 2 : 4);
  }

  std::vector<std::uint8_t>& out_;
};

/// Writes an event's payload as the wire has it, `{"a": [values...], "k": {}}`, into `out`
/// (cleared first).
template <class... A>
void pack_event(std::vector<std::uint8_t>& out, const A&... values) {
  out.clear();
  Packer p(out);
  p.map(2);
  p.value(std::string_view("a"));
  p.array(sizeof...(A));
  (p.value(values), ...);
  p.value(std::string_view("k"));
  p.map(0);
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

/// A typed handler's fast path: decodes the arguments and calls the handler, or returns false
/// without calling it when an argument is not in the simple form it expects (the JSON path then
/// converts it, or reports the mismatch).
using PackedHandler = std::function<bool(const PackedArgs&)>;

/// Reads one MessagePack value at `p` as T, advancing `p`; false (nothing consumed) when the
/// value is not of T's simple form or out of T's range.
template <class T>
bool unpack_value(const std::uint8_t*& p, const std::uint8_t* end, T& out) {
  if (p >= end) {
    return false;
  }
  const std::uint8_t b = *p;
  auto read_be = [](const std::uint8_t* q, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      v = (v << 8) | q[i];
    }
    return v;
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (b != 0xc2 && b != 0xc3) {
      return false;
    }
    out = b == 0xc3;
    ++p;
    return true;
  } else if constexpr (std::is_arithmetic_v<T>) {
    // Integers (and, for floating-point T, floats); anything else takes the JSON path.
    bool negative = false;
    std::uint64_t magnitude = 0;
    std::size_t used = 1;
    if (b <= 0x7f) {
      magnitude = b;
    } else if (b >= 0xe0) {
      negative = true;
      magnitude = static_cast<std::uint64_t>(-static_cast<std::int64_t>(static_cast<std::int8_t>(b)));
    } else if (b >= 0xcc && b <= 0xcf) {
      const int n = 1 << (b - 0xcc);
      magnitude = read_be(p + 1, n);
      used += static_cast<std::size_t>(n);
    } else if (b >= 0xd0 && b <= 0xd3) {
      const int n = 1 << (b - 0xd0);
      const std::uint64_t raw = read_be(p + 1, n);
      const int shift = 64 - 8 * n;
      const std::int64_t v = static_cast<std::int64_t>(raw << shift) >> shift;  // sign-extend
      negative = v < 0;
      magnitude = negative ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
      used += static_cast<std::size_t>(n);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (b == 0xcb) {
        const std::uint64_t bits = read_be(p + 1, 8);
        double d = 0;
        std::memcpy(&d, &bits, sizeof d);
        out = static_cast<T>(d);
        p += 9;
        return true;
      }
      if (b == 0xca) {
        const auto bits = static_cast<std::uint32_t>(read_be(p + 1, 4));
        float f = 0;
        std::memcpy(&f, &bits, sizeof f);
        out = static_cast<T>(f);
        p += 5;
        return true;
      }
      return false;
    } else {
      return false;
    }
    if constexpr (std::is_floating_point_v<T>) {
      out = negative ? -static_cast<T>(magnitude) : static_cast<T>(magnitude);
    } else {
      using U = std::make_unsigned_t<T>;
      if (negative) {
        if constexpr (std::is_unsigned_v<T>) {
          return false;
        } else if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<T>::max()) + 1) {
          return false;
        }
        out = static_cast<T>(static_cast<U>(0 - magnitude));
      } else {
        if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) {
          return false;
        }
        out = static_cast<T>(magnitude);
      }
    }
    p += used;
    return true;
  } else {
    // std::string from str, std::vector<std::uint8_t> from bin.
    constexpr bool is_string = std::is_same_v<T, std::string>;
    std::size_t header = 0;
    std::uint64_t n = 0;
    if (is_string && b >= 0xa0 && b <= 0xbf) {
      header = 1;
      n = b & 0x1fU;
    } else if (b >= (is_string ? 0xd9 : 0xc4) && b <= (is_string ? 0xdb : 0xc6)) {
      const int len_bytes = 1 << (b - (is_string ? 0xd9 : 0xc4));
      header = 1 + static_cast<std::size_t>(len_bytes);
      n = read_be(p + 1, len_bytes);
    } else {
      return false;
    }
    const auto* first = reinterpret_cast<const typename T::value_type*>(p + header);
    out.assign(first, first + n);
    p += header + n;
    return true;
  }
}

}  // namespace ditask::detail
