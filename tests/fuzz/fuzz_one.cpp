// SPDX-License-Identifier: MIT
#include "fuzz_one.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <string_view>
#include <vector>

#include "ditask/error.hpp"

#include "mesh/auth.hpp"
#include "mesh/frame.hpp"
#include "mesh/hello.hpp"
#include "codec/envelope.hpp"
#include "codec/json_msgpack.hpp"

namespace ditask::fuzz {
namespace {

namespace mesh = ditask::detail::mesh;
namespace codec = ditask::detail::codec;

/// Stops the run when an invariant breaks: libFuzzer saves the input that got here.
void expect(bool ok, const char* invariant) {
  if (!ok) {
    std::fprintf(stderr, "fuzz: invariant broken: %s\n", invariant);
    std::abort();
  }
}

/// A hello that decodes must encode again (decode enforces encode's limits) to the same hello.
void check_hello(std::span<const std::uint8_t> payload) {
  mesh::Hello hello;
  try {
    hello = mesh::decode_hello(payload);
  } catch (const Error&) {
    return;
  }
  const auto again = mesh::decode_hello(mesh::encode_hello(hello));
  expect(again == hello, "decode_hello(encode_hello(h)) == h");
}

/// Event arguments that decode must re-encode to bytes that are stable after one round (a byte
/// compare, because NaN != NaN in json).
/// The fast read of one positional argument as T, when it accepts it, gives what the JSON path
/// gives, and moves exactly past that argument.
template <class T>
void check_fast_read(const std::uint8_t* at, const std::uint8_t* next, const std::uint8_t* end, const json& value) {
  T fast{};
  const std::uint8_t* p = at;
  if (!detail::unpack_value(p, end, fast)) {
    expect(p == at, "a declined fast read consumes nothing");
    return;
  }
  expect(p == next, "a fast read ends where the argument ends");
  if constexpr (std::is_floating_point_v<T>) {
    const T slow = detail::from_arg<T>(value);
    expect((fast != fast && slow != slow) || fast == slow, "the fast read agrees with the JSON path");
  } else {
    expect(fast == detail::from_arg<T>(value), "the fast read agrees with the JSON path");
  }
}

/// locate_event_args refuses only malformed MessagePack, locates only payloads decode_event_args
/// accepts, and the fast reads of the positional arguments it finds agree with the decoded JSON.
void check_fast_path(std::span<const std::uint8_t> payload, const EventArgs* args) {
  std::optional<detail::PackedPayload> layout;
  try {
    layout = codec::locate_event_args(payload);
  } catch (const Error&) {
    expect(args == nullptr, "locate_event_args refuses only what decode_event_args refuses");
    return;
  }
  if (!layout) {
    return;  // another layout (or not an event at all): decode_event_args decides
  }
  expect(args != nullptr, "what locate_event_args locates, decode_event_args accepts");
  expect(layout->count == args->args.size() && layout->named_count == args->kwargs.size(),
         "the located counts match the decoded arguments");
  const std::uint8_t* at = payload.data() + layout->args_begin;
  const std::uint8_t* end = payload.data() + layout->args_end;
  for (const auto& value : args->args) {
    const std::uint8_t* next = payload.data() + codec::skip_value(payload, static_cast<std::size_t>(at - payload.data()), codec::kMaxNesting);
    check_fast_read<std::int64_t>(at, next, end, value);
    check_fast_read<std::uint8_t>(at, next, end, value);
    check_fast_read<std::int16_t>(at, next, end, value);
    check_fast_read<double>(at, next, end, value);
    check_fast_read<bool>(at, next, end, value);
    check_fast_read<std::string>(at, next, end, value);
    check_fast_read<std::vector<std::uint8_t>>(at, next, end, value);
    at = next;
  }
  expect(at == end, "the positional arguments end where located");
}

void check_event_args(std::span<const std::uint8_t> payload) {
  EventArgs args;
  try {
    args = codec::decode_event_args(payload);
  } catch (const Error&) {
    check_fast_path(payload, nullptr);
    return;
  }
  check_fast_path(payload, &args);
  const auto once = codec::encode_event_args(args);
  const auto twice = codec::encode_event_args(codec::decode_event_args(once));
  expect(once == twice, "encode_event_args is stable after one round trip");
}

void check_proof(std::span<const std::uint8_t> payload, std::uint64_t sender) {
  const std::string_view proof(reinterpret_cast<const char*>(payload.data()), payload.size());
  const bool ok = mesh::verify_proof("fuzz-token", std::string(64, 'a'), std::string(64, 'b'),
                                     static_cast<std::int64_t>(sender), proof);
  expect(!ok, "no fuzz input forges an HMAC proof");
}

/// A decoded frame encodes back to bytes that decode, in one feed, to the same frame.
void check_frame(const mesh::Frame& frame) {
  expect(frame.topic.size() + frame.payload.size() <= kFuzzMaxFrameBytes,
         "frames stay within the decoder's limit");
  const auto bytes = mesh::encode(frame);
  mesh::FrameDecoder again(kFuzzMaxFrameBytes);
  const auto r = again.feed(bytes);
  expect(!r.error && r.frames.size() == 1 && r.frames.front() == frame,
         "decode(encode(frame)) == frame");
  check_hello(frame.payload);
  check_event_args(frame.payload);
  check_proof(frame.payload, frame.sender);
}

void fuzz_stream(std::size_t chunk, std::span<const std::uint8_t> stream) {
  mesh::FrameDecoder decoder(kFuzzMaxFrameBytes);
  while (!stream.empty()) {
    const auto n = std::min(chunk, stream.size());
    auto r = decoder.feed(stream.first(n));
    stream = stream.subspan(n);
    expect(decoder.buffered() <= mesh::kHeaderSize + kFuzzMaxFrameBytes,
           "the decoder buffers at most one frame");
    for (const auto& frame : r.frames) {
      check_frame(frame);
    }
    if (r.error) {
      expect(decoder.poisoned(), "an error poisons the decoder");
      const auto later = decoder.feed(stream);
      expect(later.frames.empty() && later.error == r.error,
             "a poisoned decoder repeats its error and yields nothing");
      return;
    }
  }
}

}  // namespace

void fuzz_one(std::span<const std::uint8_t> data) {
  if (data.empty()) {
    return;
  }
  const std::uint8_t mode = data.front();
  const auto rest = data.subspan(1);
  if (mode >= 0x80) {
    check_hello(rest);
    check_event_args(rest);
    return;
  }
  fuzz_stream(std::size_t{mode} + 1, rest);
}

}  // namespace ditask::fuzz
