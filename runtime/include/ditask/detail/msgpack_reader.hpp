// SPDX-License-Identifier: MIT
// The bounded MessagePack reader (Reader).
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

/// Reads MessagePack from [begin, end) and never past `end`, whatever the bytes claim: a value's
/// header is read only when all of it is there, a str, bin or ext only when all its bytes are.
/// A failed read consumes nothing and says why (failure()).
class Reader {
 public:
  /// What the next value is.
  enum class Kind : std::uint8_t { nil, boolean, positive, negative, float32, float64, str, bin, ext, array, map };
  /// One value's header: scalars whole; str, bin and ext with their bytes; arrays and maps with
  /// their element or entry count (the elements follow).
  struct Item {
    Kind kind = Kind::nil;
    bool boolean = false;
    std::uint64_t count = 0;       ///< positive: the value; str/bin/ext: bytes; array: elements; map: entries
    std::int64_t negative = 0;     ///< negative: the value
    double number = 0;             ///< float32/float64: the value
    std::int8_t ext_type = 0;
    const std::uint8_t* data = nullptr;  ///< str/bin/ext: the first byte
  };
  /// Why a read failed.
  enum class Why : std::uint8_t { none, truncated, invalid_byte, too_deep, key_not_string };
  struct Failure {
    Why why = Why::none;
    std::size_t at = 0;        ///< offset from begin: of the read that failed (truncated), just past
                               ///< the offending byte (invalid_byte, key_not_string), or past the
                               ///< header of the container that went too deep
    std::uint64_t needed = 0;  ///< truncated: bytes the read needed
    std::size_t left = 0;      ///< truncated: bytes that were left
    std::uint8_t byte = 0;     ///< invalid_byte: which
  };

  Reader(const std::uint8_t* begin, const std::uint8_t* end) noexcept : begin_(begin), p_(begin), end_(end) {}
  explicit Reader(std::span<const std::uint8_t> bytes) noexcept : Reader(bytes.data(), bytes.data() + bytes.size()) {}

  /// Reads the next value's header (and a str's, bin's or ext's bytes). False when the bytes end
  /// first or hold 0xc1.
  bool next(Item& item) noexcept {
    const std::uint8_t* start = p_;
    if (!next_at(item)) {
      p_ = start;
      return false;
    }
    return true;
  }
  /// Steps over one whole value, checking it as the JSON path reads it: at most `max_depth`
  /// nested arrays and maps, map keys that are strings, and (before reading them) at least one
  /// byte left per array element and two per map entry.
  bool skip(std::size_t max_depth) noexcept {
    const std::uint8_t* start = p_;
    if (!skip_at(max_depth, 0)) {
      p_ = start;
      return false;
    }
    return true;
  }
  /// Fails with `truncated` unless `n` more bytes are left (a container's minimum size).
  bool need(std::uint64_t n) noexcept {
    if (n > static_cast<std::uint64_t>(end_ - p_)) {
      return fail(Why::truncated, offset(), n);
    }
    return true;
  }
  /// Records a failure found by the caller (a key that is not a string, nesting too deep).
  bool fail(Why why, std::size_t at, std::uint64_t needed = 0, std::uint8_t byte = 0) noexcept {
    failure_ = Failure{why, at, needed, static_cast<std::size_t>(end_ - begin_) - std::min(at, static_cast<std::size_t>(end_ - begin_)), byte};
    return false;
  }

  const std::uint8_t* position() const noexcept { return p_; }
  std::size_t offset() const noexcept { return static_cast<std::size_t>(p_ - begin_); }
  bool at_end() const noexcept { return p_ == end_; }
  const Failure& failure() const noexcept { return failure_; }

 private:
  std::uint64_t big_endian(std::size_t n) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      v = (v << 8) | p_[i];
    }
    p_ += n;
    return v;
  }
  bool have(std::uint64_t n) noexcept {
    if (n > static_cast<std::uint64_t>(end_ - p_)) {
      failure_ = Failure{Why::truncated, offset(), n, static_cast<std::size_t>(end_ - p_), 0};
      return false;
    }
    return true;
  }
  bool sized(Item& item, Kind kind, std::size_t length_bytes) noexcept {
    if (!have(length_bytes)) {
      return false;
    }
    item.kind = kind;
    item.count = big_endian(length_bytes);
    return kind == Kind::array || kind == Kind::map || bytes(item);
  }
  bool bytes(Item& item) noexcept {
    if (!have(item.count)) {
      return false;
    }
    item.data = p_;
    p_ += item.count;
    return true;
  }
  bool ext(Item& item, std::size_t length_bytes, std::uint64_t fixed) noexcept {
    if (!have(length_bytes)) {
      return false;
    }
    item.kind = Kind::ext;
    item.count = length_bytes == 0 ? fixed : big_endian(length_bytes);
    if (!have(1)) {
      return false;
    }
    item.ext_type = static_cast<std::int8_t>(*p_++);
    return bytes(item);
  }
  bool next_at(Item& item) noexcept;
  bool skip_at(std::size_t max_depth, std::size_t depth) noexcept;

  const std::uint8_t* begin_;
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  Failure failure_;
};

inline bool Reader::next_at(Item& item) noexcept {
  if (!have(1)) {
    return false;
  }
  const std::uint8_t b = *p_++;
  item = Item{};
  if (b <= 0x7f || b >= 0xe0) {
    item.kind = b <= 0x7f ? Kind::positive : Kind::negative;
    item.count = b;
    item.negative = static_cast<std::int8_t>(b);
    return true;
  }
  if (b <= 0x8f || (b >= 0x90 && b <= 0x9f)) {
    item.kind = b <= 0x8f ? Kind::map : Kind::array;
    item.count = b & 0x0fU;
    return true;
  }
  if (b <= 0xbf) {
    item.kind = Kind::str;
    item.count = b & 0x1fU;
    return bytes(item);
  }
  switch (b) {
    case 0xc0: item.kind = Kind::nil; return true;
    case 0xc2: case 0xc3: item.kind = Kind::boolean; item.boolean = b == 0xc3; return true;
    case 0xc4: return sized(item, Kind::bin, 1);
    case 0xc5: return sized(item, Kind::bin, 2);
    case 0xc6: return sized(item, Kind::bin, 4);
    case 0xc7: return ext(item, 1, 0);
    case 0xc8: return ext(item, 2, 0);
    case 0xc9: return ext(item, 4, 0);
    case 0xca: case 0xcb: {
      const std::size_t n = b == 0xca ? 4 : 8;
      if (!have(n)) {
        return false;
      }
      const std::uint64_t bits = big_endian(n);
      item.kind = n == 4 ? Kind::float32 : Kind::float64;
      if (n == 4) {
        float f = 0;
        const auto narrow = static_cast<std::uint32_t>(bits);
        std::memcpy(&f, &narrow, sizeof f);
        item.number = static_cast<double>(f);
      } else {
        std::memcpy(&item.number, &bits, sizeof item.number);
      }
      return true;
    }
    case 0xcc: case 0xcd: case 0xce: case 0xcf: {
      const std::size_t n = std::size_t{1} << (b - 0xcc);
      if (!have(n)) {
        return false;
      }
      item.kind = Kind::positive;
      item.count = big_endian(n);
      return true;
    }
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
      const std::size_t n = std::size_t{1} << (b - 0xd0);
      if (!have(n)) {
        return false;
      }
      const int shift = 64 - 8 * static_cast<int>(n);
      const auto v = static_cast<std::int64_t>(big_endian(n) << shift) >> shift;  // sign-extend
      item.kind = v < 0 ? Kind::negative : Kind::positive;
      item.negative = v;
      item.count = v < 0 ? 0 : static_cast<std::uint64_t>(v);
      return true;
    }
    case 0xd4: return ext(item, 0, 1);
    case 0xd5: return ext(item, 0, 2);
    case 0xd6: return ext(item, 0, 4);
    case 0xd7: return ext(item, 0, 8);
    case 0xd8: return ext(item, 0, 16);
    case 0xd9: return sized(item, Kind::str, 1);
    case 0xda: return sized(item, Kind::str, 2);
    case 0xdb: return sized(item, Kind::str, 4);
    case 0xdc: return sized(item, Kind::array, 2);
    case 0xdd: return sized(item, Kind::array, 4);
    case 0xde: return sized(item, Kind::map, 2);
    case 0xdf: return sized(item, Kind::map, 4);
    default:
      failure_ = Failure{Why::invalid_byte, offset(), 0, 0, b};
      return false;
  }
}

inline bool Reader::skip_at(std::size_t max_depth, std::size_t depth) noexcept {
  Item item;
  if (!next_at(item)) {
    return false;
  }
  if (item.kind != Kind::array && item.kind != Kind::map) {
    return true;
  }
  if (depth + 1 > max_depth) {
    return fail(Why::too_deep, offset());
  }
  const bool is_map = item.kind == Kind::map;
  if (!need(is_map ? 2 * item.count : item.count)) {
    return false;
  }
  for (std::uint64_t i = 0; i < item.count; ++i) {
    if (is_map) {
      Item key;
      if (!next_at(key)) {
        return false;
      }
      if (key.kind != Kind::str) {
        return fail(Why::key_not_string, offset());
      }
    }
    if (!skip_at(max_depth, depth + 1)) {
      return false;
    }
  }
  return true;
}

}  // namespace ditask::detail::inline wire_v1
