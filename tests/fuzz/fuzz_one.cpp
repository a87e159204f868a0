// SPDX-License-Identifier: MIT
#include "fuzz_one.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ditask/error.hpp"

#include "mesh/auth.hpp"
#include "mesh/frame.hpp"
#include "mesh/hello.hpp"

namespace ditask::fuzz {
namespace {

namespace mesh = ditask::detail::mesh;

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
void check_event_args(std::span<const std::uint8_t> payload) {
  EventArgs args;
  try {
    args = mesh::decode_event_args(payload);
  } catch (const Error&) {
    return;
  }
  const auto once = mesh::encode_event_args(args);
  const auto twice = mesh::encode_event_args(mesh::decode_event_args(once));
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
