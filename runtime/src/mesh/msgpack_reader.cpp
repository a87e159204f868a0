// SPDX-License-Identifier: MIT
#include "msgpack_reader.hpp"

#include <cstring>
#include <string>

#include "ditask/error.hpp"

namespace ditask::detail::mesh {
namespace {

using json = nlohmann::json;

class Reader {
 public:
  // `build`: false checks and skips values without building them (every value is json null).
  Reader(std::span<const std::uint8_t> bytes, std::size_t max_depth, bool build = true, std::size_t pos = 0)
      : bytes_(bytes), max_depth_(max_depth), build_(build), pos_(pos) {}

  std::size_t position() const noexcept { return pos_; }

  json value(std::size_t depth) {
    const std::uint8_t b = byte();
    if (b <= 0x7f) {
      return json(static_cast<std::uint64_t>(b));
    }
    if (b >= 0xe0) {
      return json(static_cast<std::int64_t>(static_cast<std::int8_t>(b)));
    }
    if (b <= 0x8f) {
      return map(b & 0x0fU, depth);
    }
    if (b <= 0x9f) {
      return array(b & 0x0fU, depth);
    }
    if (b <= 0xbf) {
      return json(string(b & 0x1fU));
    }
    switch (b) {
      case 0xc0: return json(nullptr);
      case 0xc2: return json(false);
      case 0xc3: return json(true);
      case 0xc4: return binary(uint(1));
      case 0xc5: return binary(uint(2));
      case 0xc6: return binary(uint(4));
      case 0xc7: return ext(uint(1));
      case 0xc8: return ext(uint(2));
      case 0xc9: return ext(uint(4));
      case 0xca: {
        const auto bits = static_cast<std::uint32_t>(uint(4));
        float f = 0;
        std::memcpy(&f, &bits, sizeof f);
        return json(static_cast<double>(f));
      }
      case 0xcb: {
        const std::uint64_t bits = uint(8);
        double d = 0;
        std::memcpy(&d, &bits, sizeof d);
        return json(d);
      }
      case 0xcc: return json(uint(1));
      case 0xcd: return json(uint(2));
      case 0xce: return json(uint(4));
      case 0xcf: return json(uint(8));
      case 0xd0: return json(static_cast<std::int64_t>(static_cast<std::int8_t>(uint(1))));
      case 0xd1: return json(static_cast<std::int64_t>(static_cast<std::int16_t>(uint(2))));
      case 0xd2: return json(static_cast<std::int64_t>(static_cast<std::int32_t>(uint(4))));
      case 0xd3: return json(static_cast<std::int64_t>(uint(8)));
      case 0xd4: return ext(1);
      case 0xd5: return ext(2);
      case 0xd6: return ext(4);
      case 0xd7: return ext(8);
      case 0xd8: return ext(16);
      case 0xd9: return json(string(uint(1)));
      case 0xda: return json(string(uint(2)));
      case 0xdb: return json(string(uint(4)));
      case 0xdc: return array(uint(2), depth);
      case 0xdd: return array(uint(4), depth);
      case 0xde: return map(uint(2), depth);
      case 0xdf: return map(uint(4), depth);
      default: fail("invalid byte 0x" + hex(b));
    }
  }

  void finish() const {
    if (pos_ != bytes_.size()) {
      fail(std::to_string(bytes_.size() - pos_) + " bytes after the value");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("not valid MessagePack at byte " + std::to_string(pos_) + ": " + why);
  }

  static std::string hex(std::uint8_t b) {
    static constexpr char digits[] = "0123456789abcdef";
    return {digits[b >> 4], digits[b & 0xfU]};
  }

  void need(std::uint64_t n) const {
    if (n > bytes_.size() - pos_) {
      fail("truncated: " + std::to_string(n) + " more bytes needed, " + std::to_string(bytes_.size() - pos_) +
           " left");
    }
  }

  std::uint8_t byte() {
    need(1);
    return bytes_[pos_++];
  }

  std::uint64_t uint(std::size_t n) {  // big-endian
    need(n);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      v = (v << 8) | bytes_[pos_ + i];
    }
    pos_ += n;
    return v;
  }

  std::string string(std::uint64_t n) {
    need(n);
    if (!build_) {
      pos_ += static_cast<std::size_t>(n);
      return {};
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  json binary(std::uint64_t n) {
    need(n);
    const auto* p = bytes_.data() + pos_;
    pos_ += static_cast<std::size_t>(n);
    if (!build_) {
      return {};
    }
    return json::binary(std::vector<std::uint8_t>(p, p + n));
  }

  json ext(std::uint64_t n) {
    const auto subtype = static_cast<std::uint8_t>(byte());
    need(n);
    const auto* p = bytes_.data() + pos_;
    pos_ += static_cast<std::size_t>(n);
    if (!build_) {
      return {};
    }
    return json::binary(std::vector<std::uint8_t>(p, p + n), subtype);
  }

  void deeper(std::size_t depth) const {
    if (depth + 1 > max_depth_) {
      fail("nested deeper than " + std::to_string(max_depth_) + " levels");
    }
  }

  json array(std::uint64_t n, std::size_t depth) {
    deeper(depth);
    need(n);  // every element takes at least one byte: no reservation beyond the input
    if (!build_) {
      for (std::uint64_t i = 0; i < n; ++i) {
        value(depth + 1);
      }
      return {};
    }
    json out = json::array();
    out.get_ref<json::array_t&>().reserve(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i) {
      out.get_ref<json::array_t&>().push_back(value(depth + 1));
    }
    return out;
  }

  json map(std::uint64_t n, std::size_t depth) {
    deeper(depth);
    need(2 * n);
    json out = build_ ? json::object() : json();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint8_t k = byte();
      std::uint64_t len = 0;
      if (k >= 0xa0 && k <= 0xbf) {
        len = k & 0x1fU;
      } else if (k == 0xd9) {
        len = uint(1);
      } else if (k == 0xda) {
        len = uint(2);
      } else if (k == 0xdb) {
        len = uint(4);
      } else {
        fail("a map key that is not a string");
      }
      std::string key = string(len);
      if (build_) {
        out.get_ref<json::object_t&>()[std::move(key)] = value(depth + 1);
      } else {
        value(depth + 1);
      }
    }
    return out;
  }

  std::span<const std::uint8_t> bytes_;
  std::size_t max_depth_;
  bool build_;
  std::size_t pos_;
};

}  // namespace

json read_msgpack(std::span<const std::uint8_t> bytes, std::size_t max_depth) {
  Reader reader(bytes, max_depth);
  json out = reader.value(0);
  reader.finish();
  return out;
}

std::size_t skip_msgpack(std::span<const std::uint8_t> bytes, std::size_t pos, std::size_t max_depth) {
  Reader reader(bytes, max_depth, false, pos);
  reader.value(0);
  return reader.position();
}

}  // namespace ditask::detail::mesh
