// SPDX-License-Identifier: MIT
#include "envelope.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "ditask/error.hpp"
#include "ditask/detail/packed_args.hpp"
#include "json_msgpack.hpp"
#include "../large_buffers.hpp"

namespace ditask::detail::codec {
namespace {

[[noreturn]] void malformed(const std::string& why) { throw Error("malformed event payload: " + why); }

constexpr std::size_t kInner = kMaxNesting - 2;  // an argument sits inside the map and its array

// The envelope as pack_event writes it for up to 15 arguments and no named ones, read by its
// bytes: {"a": [...], "k": {}} is 0x82 0xa1 'a' 0x9N, the arguments, 0xa1 'k' 0x80. Each argument
// is checked as the general pass checks it. Null for any other layout (the general pass decides).
std::optional<PackedPayload> locate_positional_only(std::span<const std::uint8_t> payload) {
  constexpr std::uint8_t kHead[] = {0x82, 0xa1, 'a'};
  constexpr std::uint8_t kTail[] = {0xa1, 'k', 0x80};
  const std::uint8_t* d = payload.data();
  const std::size_t n = payload.size();
  if (n < sizeof kHead + 1 + sizeof kTail || std::memcmp(d, kHead, sizeof kHead) != 0 || (d[3] & 0xf0) != 0x90 ||
      std::memcmp(d + n - sizeof kTail, kTail, sizeof kTail) != 0) {
    return std::nullopt;
  }
  PackedPayload p;
  p.count = d[3] & 0x0f;
  p.args_begin = sizeof kHead + 1;
  Reader reader(d + p.args_begin, d + n - sizeof kTail);  // its offsets count from args_begin
  for (std::size_t i = 0; i < p.count; ++i) {
    if (!reader.skip(kInner)) {
      return std::nullopt;
    }
  }
  p.args_end = p.args_begin + reader.offset();
  if (p.args_end != n - sizeof kTail) {
    return std::nullopt;  // the last bytes only looked like the tail
  }
  return p;
}

// The usual envelope {"a": [...], "k": {...}} located and checked in one pass (each argument
// checked as it is skipped, as a check of the whole value would). Null for anything else, or
// anything malformed: the caller's two passes then decide, and word the error.
std::optional<PackedPayload> locate_in_one_pass(std::span<const std::uint8_t> payload) {
  if (auto p = locate_positional_only(payload)) {
    return p;
  }
  Reader reader(payload);
  Reader::Item item;
  const auto is_key = [&](char name) {
    return reader.next(item) && item.kind == Reader::Kind::str && item.count == 1 &&
           item.data[0] == static_cast<std::uint8_t>(name);
  };
  if (!reader.next(item) || item.kind != Reader::Kind::map || item.count != 2 || !is_key('a') ||
      !reader.next(item) || item.kind != Reader::Kind::array) {
    return std::nullopt;
  }
  PackedPayload p;
  p.count = static_cast<std::size_t>(item.count);
  p.args_begin = reader.offset();
  for (std::size_t i = 0; i < p.count; ++i) {
    if (!reader.skip(kInner)) {
      return std::nullopt;
    }
  }
  p.args_end = reader.offset();
  if (!is_key('k') || !reader.next(item) || item.kind != Reader::Kind::map) {
    return std::nullopt;
  }
  p.named_count = static_cast<std::size_t>(item.count);
  for (std::size_t i = 0; i < p.named_count; ++i) {
    Reader::Item key;
    if (!reader.next(key) || key.kind != Reader::Kind::str || !reader.skip(kInner)) {
      return std::nullopt;
    }
  }
  if (reader.offset() != payload.size()) {
    return std::nullopt;
  }
  return p;
}

}  // namespace

std::vector<std::uint8_t> encode_event_args(const EventArgs& args) {
  // One allocation for the usual event: strings and binaries dominate its size.
  std::size_t estimate = 32 + 64 * args.kwargs.size();
  for (const auto& a : args.args) {
    estimate += a.is_binary() ? a.get_binary().size() + 6 : a.is_string() ? a.get_ref<const std::string&>().size() + 5 : 16;
  }
  std::vector<std::uint8_t> out;
  out.reserve(estimate);
  Packer p(out);
  pack_envelope_begin(p, args.args.size());
  for (const auto& a : args.args) {
    write_json(p, a);
  }
  pack_envelope_named(p, args.kwargs.size());
  for (const auto& [name, value] : args.kwargs.items()) {
    p.string(name);
    write_json(p, value);
  }
  return out;
}

EventArgs decode_event_args(std::span<const std::uint8_t> payload) {
  json j;
  try {
    j = read_json(payload, kMaxNesting);
  } catch (const Error& e) {
    malformed(e.what());
  }
  if (!j.is_object()) {
    malformed("expected a map, got " + std::string(j.type_name()));
  }
  auto a = j.find("a");
  auto k = j.find("k");
  if (a == j.end() || !a->is_array()) {
    malformed("expected an array 'a' of positional arguments");
  }
  if (k == j.end() || !k->is_object()) {
    malformed("expected a map 'k' of named arguments");
  }
  return EventArgs{std::move(*a), std::move(*k)};
}

std::optional<PackedPayload> locate_event_args(std::span<const std::uint8_t> payload) {
  if (auto located = locate_in_one_pass(payload)) {
    return located;
  }
  // Malformed, or another layout: a check of the whole value tells which, and words the error.
  try {
    if (const std::size_t end = skip_value(payload, 0, kMaxNesting); end != payload.size()) {
      malformed(std::to_string(payload.size() - end) + " bytes after the value");
    }
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with("malformed event payload")) {
      throw;
    }
    malformed(e.what());
  }
  // Well-formed, so the one pass failed on the layout alone: not the envelope (the JSON path
  // decides what it is).
  return std::nullopt;
}

}  // namespace ditask::detail::codec

namespace ditask::detail {
EventArgs PackedPayload::unpack() const { return codec::decode_event_args(data()); }
}  // namespace ditask::detail
