// SPDX-License-Identifier: MIT
#include "json_msgpack.hpp"

#include <limits>

#include "ditask/error.hpp"

namespace ditask::detail::codec {
namespace {

using json = nlohmann::json;
using Kind = Reader::Kind;

[[noreturn]] void fail(const Reader& reader, std::size_t max_depth) { throw Error(describe(reader.failure(), max_depth)); }

std::string hex(std::uint8_t b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return {kDigits[b >> 4], kDigits[b & 0xfU]};
}

json value(Reader& reader, std::size_t max_depth, std::size_t depth);

json container(Reader& reader, const Reader::Item& item, std::size_t max_depth, std::size_t depth) {
  if (depth + 1 > max_depth) {
    reader.fail(Reader::Why::too_deep, reader.offset());
    fail(reader, max_depth);
  }
  if (item.kind == Kind::array) {
    if (!reader.need(item.count)) {  // every element takes a byte: no reservation beyond the input
      fail(reader, max_depth);
    }
    json out = json::array();
    auto& elements = out.get_ref<json::array_t&>();
    elements.reserve(static_cast<std::size_t>(item.count));
    for (std::uint64_t i = 0; i < item.count; ++i) {
      elements.push_back(value(reader, max_depth, depth + 1));
    }
    return out;
  }
  if (!reader.need(2 * item.count)) {
    fail(reader, max_depth);
  }
  json out = json::object();
  auto& entries = out.get_ref<json::object_t&>();
  for (std::uint64_t i = 0; i < item.count; ++i) {
    Reader::Item key;
    if (!reader.next(key)) {
      fail(reader, max_depth);
    }
    if (key.kind != Kind::str) {
      reader.fail(Reader::Why::key_not_string, reader.offset());
      fail(reader, max_depth);
    }
    std::string name(reinterpret_cast<const char*>(key.data), static_cast<std::size_t>(key.count));
    entries[std::move(name)] = value(reader, max_depth, depth + 1);
  }
  return out;
}

json value(Reader& reader, std::size_t max_depth, std::size_t depth) {
  Reader::Item item;
  if (!reader.next(item)) {
    fail(reader, max_depth);
  }
  if (item.kind == Kind::array || item.kind == Kind::map) {
    return container(reader, item, max_depth, depth);
  }
  return scalar_json(item);
}

}  // namespace

json scalar_json(const Reader::Item& item) {
  switch (item.kind) {
    case Kind::nil: return json(nullptr);
    case Kind::boolean: return json(item.boolean);
    case Kind::positive: return json(item.count);
    case Kind::negative: return json(item.negative);
    case Kind::float32:
    case Kind::float64: return json(item.number);
    case Kind::str:
      return json(std::string(reinterpret_cast<const char*>(item.data), static_cast<std::size_t>(item.count)));
    case Kind::bin: return json::binary(std::vector<std::uint8_t>(item.data, item.data + item.count));
    case Kind::ext:
      return json::binary(std::vector<std::uint8_t>(item.data, item.data + item.count),
                          static_cast<std::uint8_t>(item.ext_type));
    case Kind::array: return json::array();
    case Kind::map: return json::object();
  }
  return json();
}

void write_json(Packer& packer, const json& value) {
  switch (value.type()) {
    case json::value_t::null:
    case json::value_t::discarded: packer.nil(); return;
    case json::value_t::boolean: packer.value(value.get<bool>()); return;
    case json::value_t::number_integer: packer.integer(value.get<std::int64_t>()); return;
    case json::value_t::number_unsigned: packer.unsigned_int(value.get<std::uint64_t>()); return;
    case json::value_t::number_float: {
      // As nlohmann::json::to_msgpack does (the bytes earlier releases sent): float32 when exact.
      const double d = value.get<double>();
      const bool in_range = d >= static_cast<double>(std::numeric_limits<float>::lowest()) &&
                            d <= static_cast<double>(std::numeric_limits<float>::max());
      if (in_range && static_cast<double>(static_cast<float>(d)) == d) {
        const auto f = static_cast<float>(d);
        packer.float32(f);
      } else {
        packer.float64(d);
      }
      return;
    }
    case json::value_t::string: packer.string(value.get_ref<const std::string&>()); return;
    case json::value_t::binary: {
      const auto& bin = value.get_binary();
      if (bin.has_subtype()) {
        packer.ext(static_cast<std::int8_t>(bin.subtype()), bin);
      } else {
        packer.binary(bin);
      }
      return;
    }
    case json::value_t::array:
      packer.array(value.size());
      for (const auto& element : value) {
        write_json(packer, element);
      }
      return;
    case json::value_t::object:
      packer.map(value.size());
      for (const auto& [key, element] : value.items()) {
        packer.string(key);
        write_json(packer, element);
      }
      return;
  }
}

std::string describe(const Reader::Failure& f, std::size_t max_depth) {
  std::string why;
  switch (f.why) {
    case Reader::Why::truncated:
      why = "truncated: " + std::to_string(f.needed) + " more bytes needed, " + std::to_string(f.left) + " left";
      break;
    case Reader::Why::invalid_byte: why = "invalid byte 0x" + hex(f.byte); break;
    case Reader::Why::too_deep: why = "nested deeper than " + std::to_string(max_depth) + " levels"; break;
    case Reader::Why::key_not_string: why = "a map key that is not a string"; break;
    case Reader::Why::none: why = "no error"; break;
  }
  return "not valid MessagePack at byte " + std::to_string(f.at) + ": " + why;
}

json read_json(std::span<const std::uint8_t> bytes, std::size_t max_depth) {
  Reader reader(bytes);
  json out = value(reader, max_depth, 0);
  if (!reader.at_end()) {
    throw Error("not valid MessagePack at byte " + std::to_string(reader.offset()) + ": " +
                std::to_string(bytes.size() - reader.offset()) + " bytes after the value");
  }
  return out;
}

std::size_t skip_value(std::span<const std::uint8_t> bytes, std::size_t pos, std::size_t max_depth) {
  Reader reader(bytes.subspan(std::min(pos, bytes.size())));
  if (!reader.skip(max_depth)) {
    Reader::Failure f = reader.failure();
    f.at += pos;
    throw Error(describe(f, max_depth));
  }
  return pos + reader.offset();
}

}  // namespace ditask::detail::codec
