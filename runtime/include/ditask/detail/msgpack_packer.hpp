// SPDX-License-Identifier: MIT
// The MessagePack writer (Packer).
// Part of ditask's one MessagePack codec (msgpack.hpp): versioned with it in the inline namespace
// wire_v1 (a change to what it writes or accepts needs a new inline namespace and a new
// DITASK_ABI_VERSION, module.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ditask::detail::inline wire_v1 {

/// Appends MessagePack values to a byte vector, each in its smallest form (floats as float64).
class Packer {
 public:
  /// Appends to `out` (which keeps what it held).
  explicit Packer(std::vector<std::uint8_t>& out) noexcept : out_(out) {}

  /// An array header for `n` elements.
  void array(std::size_t n) { header(n, 0x90, 0xdc, 0xdd); }
  /// A map header for `n` entries.
  void map(std::size_t n) { header(n, 0x80, 0xde, 0xdf); }
  /// nil.
  void nil() { out_.push_back(0xc0); }
  /// A str.
  void string(std::string_view s) {
    if (s.size() < 32) {
      out_.push_back(static_cast<std::uint8_t>(0xa0 | s.size()));
    } else {
      header_sized(s.size(), 0xd9, 0xda, 0xdb);
    }
    out_.insert(out_.end(), s.begin(), s.end());
  }
  /// A bin.
  void binary(std::span<const std::uint8_t> bytes) {
    header_sized(bytes.size(), 0xc4, 0xc5, 0xc6);
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
  /// An ext of `type` (fixext for 1, 2, 4, 8 and 16 bytes).
  void ext(std::int8_t type, std::span<const std::uint8_t> bytes) {
    const std::size_t n = bytes.size();
    static constexpr std::uint8_t kFixed[] = {0xd4, 0xd5, 0, 0xd6, 0, 0, 0, 0xd7, 0, 0, 0, 0, 0, 0, 0, 0xd8};
    if (n >= 1 && n <= 16 && kFixed[n - 1] != 0) {
      out_.push_back(kFixed[n - 1]);
    } else {
      header_sized(n, 0xc7, 0xc8, 0xc9);
    }
    out_.push_back(static_cast<std::uint8_t>(type));
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
  /// A signed integer.
  void integer(std::int64_t v) {
    if (v < 0) {
      negative(v);
    } else {
      unsigned_int(static_cast<std::uint64_t>(v));
    }
  }
  /// An unsigned integer.
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
  /// A float32.
  void float32(float f) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    out_.push_back(0xca);
    big_endian(bits, 4);
  }
  /// A float64.
  void float64(double d) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    out_.push_back(0xcb);
    big_endian(bits, 8);
  }
  /// One simple C++ value: bool, a number, a string, or a std::vector<std::uint8_t> or
  /// std::span<const std::uint8_t> (bin).
  template <class T>
  void value(const T& v) {
    using D = std::remove_cv_t<std::remove_reference_t<T>>;
    if constexpr (std::is_same_v<D, bool>) {
      out_.push_back(v ? 0xc3 : 0xc2);
    } else if constexpr (std::is_floating_point_v<D>) {
      float64(static_cast<double>(v));
    } else if constexpr (std::is_integral_v<D> && std::is_signed_v<D>) {
      integer(static_cast<std::int64_t>(v));
    } else if constexpr (std::is_integral_v<D>) {
      unsigned_int(static_cast<std::uint64_t>(v));
    } else if constexpr (std::is_same_v<D, std::vector<std::uint8_t>> || std::is_same_v<D, std::span<const std::uint8_t>>) {
      binary(v);
    } else {
      string(std::string_view(v));
    }
  }

 private:
  void big_endian(std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) {
      out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
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
  void wide_length(std::size_t n, std::uint8_t b16, std::uint8_t b32) {
    const bool short_form = n <= 0xffff;
    out_.push_back(short_form ? b16 : b32);
    big_endian(n, short_form ? 2 : 4);
  }

  std::vector<std::uint8_t>& out_;
};

}  // namespace ditask::detail::inline wire_v1
