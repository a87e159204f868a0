// SPDX-License-Identifier: MIT
// The mesh wire codec: frame layout, stream decoding under any chunking, rejection of hostile
// input, and the MessagePack event payload.
#include "mesh/frame.hpp"
#include "codec/envelope.hpp"
#include "codec/json_msgpack.hpp"
#include "large_buffers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <ditask/ditask.hpp>

namespace mesh = ditask::detail::mesh;
namespace codec = ditask::detail::codec;
using Bytes = std::vector<std::uint8_t>;

namespace {

mesh::Frame make_frame(mesh::FrameType type, std::string topic, Bytes payload,
                       std::uint64_t seq = 7) {
  return mesh::Frame{type, 0, 0x0102030405060708ULL, seq, std::move(topic), std::move(payload)};
}

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

/// Feeds `stream` in chunks of `chunk` bytes and collects everything decoded.
mesh::DecodeResult feed_chunked(mesh::FrameDecoder& d, const Bytes& stream, std::size_t chunk) {
  mesh::DecodeResult all;
  for (std::size_t i = 0; i < stream.size(); i += chunk) {
    const std::size_t n = std::min(chunk, stream.size() - i);
    auto r = d.feed(std::span(stream).subspan(i, n));
    all.frames.insert(all.frames.end(), r.frames.begin(), r.frames.end());
    if (r.error) {
      all.error = r.error;
      break;
    }
  }
  return all;
}

/// A valid header with one byte changed.
Bytes header_with(std::size_t offset, std::uint8_t value) {
  auto h = mesh::encode(make_frame(mesh::FrameType::event, "t", {1}));
  h.resize(mesh::kHeaderSize);
  h[offset] = value;
  return h;
}

std::string frame_error_of(const Bytes& stream, std::size_t max = 1024) {
  mesh::FrameDecoder d(max);
  auto r = d.feed(stream);
  CHECK(r.frames.empty());
  CHECK(d.poisoned());
  return r.error.value_or("<no error>");
}

/// Parses an event payload; a ditask::Error is fine, any other exception fails the test.
void decode_args_if_valid(std::span<const std::uint8_t> payload) {
  try {
    (void)codec::decode_event_args(payload);
  } catch (const ditask::Error&) {
  }
}

}  // namespace

TEST_CASE("frames round trip through encode and the decoder", "[mesh][frame]") {
  const Bytes binary{0x00, 0xff, 0x80, 0x00, 'D', 'T', 'S', 'K'};
  const mesh::Frame frames[] = {
      make_frame(mesh::FrameType::hello, "", {}),
      make_frame(mesh::FrameType::event, "step", binary),
      make_frame(mesh::FrameType::bye, "", bytes_of("reason")),
      make_frame(mesh::FrameType::ack, "only-topic", {}),
      mesh::Frame{mesh::FrameType::ping, 0xbeef, ~0ULL, ~0ULL, std::string(300, 'x'),
                  Bytes(70000, 9)},
  };
  for (const auto& f : frames) {
    mesh::FrameDecoder d(1 << 20);
    auto r = d.feed(mesh::encode(f));
    REQUIRE_FALSE(r.error);
    REQUIRE(r.frames.size() == 1);
    CHECK(r.frames[0] == f);
    CHECK(d.buffered() == 0);
  }
}

TEST_CASE("a frame exactly at the size limit passes and one byte more is refused",
          "[mesh][frame]") {
  constexpr std::size_t kMax = 1 << 20;
  auto f = make_frame(mesh::FrameType::event, "big", Bytes(kMax - 3, 0x5a));
  mesh::FrameDecoder ok(kMax);
  auto r = ok.feed(mesh::encode(f));
  REQUIRE_FALSE(r.error);
  REQUIRE(r.frames.size() == 1);
  CHECK(r.frames[0] == f);

  f.payload.push_back(0);
  mesh::FrameDecoder tight(kMax);
  r = tight.feed(mesh::encode(f));
  CHECK(r.frames.empty());
  CHECK(r.error == "frame of 1048577 bytes exceeds the limit of 1048576 bytes");
}

TEST_CASE("the header has the documented little-endian layout", "[mesh][frame]") {
  const mesh::Frame f{mesh::FrameType::event, 0x0201, 0x1122334455667788ULL,
                      0x0A0B0C0D0E0F1011ULL,  "ab",   Bytes{0xc0, 0xde, 0x01}};
  const Bytes expected{
      'D',  'T',  'S',  'K',                           // magic
      0x02,                                            // version
      0x02,                                            // type: event
      0x01, 0x02,                                      // flags
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // sender
      0x11, 0x10, 0x0F, 0x0E, 0x0D, 0x0C, 0x0B, 0x0A,  // sequence
      0x02, 0x00,                                      // topic length
      0x00, 0x00,                                      // reserved
      0x03, 0x00, 0x00, 0x00,                          // payload length
      'a',  'b',                                       // topic
      0xc0, 0xde, 0x01,                                // payload
  };
  CHECK(mesh::encode(f) == expected);
  const auto header = mesh::encode_header(mesh::header_of(f));
  CHECK(Bytes(header.begin(), header.end()) == Bytes(expected.begin(), expected.begin() + 32));
}

TEST_CASE("encode refuses topics and payloads the header cannot describe", "[mesh][frame]") {
  auto f = make_frame(mesh::FrameType::event, std::string(65536, 't'), {});
  CHECK_THROWS_WITH(mesh::encode(f),
                    "topic of 65536 bytes is too long for a frame (at most 65535)");
  f.topic.resize(65535);
  CHECK(mesh::encode(f).size() == mesh::kHeaderSize + 65535);
  // Only the header is built, so no 4 GiB buffer is needed to test the payload limit.
  mesh::FrameHeader h{mesh::FrameType::event, 0, 1, 1, 0, std::size_t{1} << 32};
  CHECK_THROWS_AS(mesh::encode_header(h), ditask::Error);
  h.payload_bytes = (std::size_t{1} << 32) - 1;
  CHECK_NOTHROW(mesh::encode_header(h));
}

TEST_CASE("a two-frame stream decodes the same at every split point", "[mesh][frame]") {
  const auto a = make_frame(mesh::FrameType::event, "topic/a", bytes_of("first payload"), 1);
  const auto b = make_frame(mesh::FrameType::ack, "", {}, 2);
  Bytes stream = mesh::encode(a);
  const auto eb = mesh::encode(b);
  stream.insert(stream.end(), eb.begin(), eb.end());

  for (std::size_t split = 0; split <= stream.size(); ++split) {
    CAPTURE(split);
    mesh::FrameDecoder d(1024);
    auto r1 = d.feed(std::span(stream).first(split));
    auto r2 = d.feed(std::span(stream).subspan(split));
    REQUIRE_FALSE(r1.error);
    REQUIRE_FALSE(r2.error);
    r1.frames.insert(r1.frames.end(), r2.frames.begin(), r2.frames.end());
    REQUIRE(r1.frames.size() == 2);
    CHECK(r1.frames[0] == a);
    CHECK(r1.frames[1] == b);
    CHECK(d.buffered() == 0);
  }
  // Both frames in one feed, one byte per feed, and a chunk size that straddles the boundary.
  for (const std::size_t chunk : {stream.size(), std::size_t{1}, std::size_t{5}}) {
    CAPTURE(chunk);
    mesh::FrameDecoder d(1024);
    auto r = feed_chunked(d, stream, chunk);
    REQUIRE_FALSE(r.error);
    REQUIRE(r.frames.size() == 2);
    CHECK(r.frames[0] == a);
    CHECK(r.frames[1] == b);
  }
}

TEST_CASE("frames: small whole event payloads of one read share a buffer, others keep their own",
          "[mesh][frame]") {
  const mesh::Frame frames[] = {
      make_frame(mesh::FrameType::event, "a", Bytes(10, 1), 1),
      make_frame(mesh::FrameType::event, "b", Bytes(20, 2), 2),
      make_frame(mesh::FrameType::hello, "", bytes_of("not an event"), 3),
      make_frame(mesh::FrameType::event, "big", Bytes(5000, 3), 4),  // over the limit below
      make_frame(mesh::FrameType::event, "c", Bytes(30, 4), 5),
  };
  Bytes stream;
  for (const auto& f : frames) {
    const auto e = mesh::encode(f);
    stream.insert(stream.end(), e.begin(), e.end());
  }
  const auto same_buffer = [](const mesh::Frame& x, const mesh::Frame& y) {
    return x.shared && y.shared && !x.shared.owner_before(y.shared) && !y.shared.owner_before(x.shared);
  };
  SECTION("in one read") {
    mesh::FrameDecoder d(1 << 20);
    d.share_small_payloads(4096);
    mesh::DecodeResult r;
    d.feed(stream, r);
    REQUIRE_FALSE(r.error);
    REQUIRE(r.frames.size() == 5);
    for (std::size_t i = 0; i < 5; ++i) {
      CAPTURE(i);
      CHECK(r.frames[i].topic == frames[i].topic);
      CHECK(r.frames[i].seq == frames[i].seq);
      const auto body = r.frames[i].body();
      CHECK(Bytes(body.begin(), body.end()) == frames[i].payload);
    }
    CHECK(same_buffer(r.frames[0], r.frames[1]));
    CHECK(same_buffer(r.frames[1], r.frames[4]));
    CHECK(r.frames[0].payload.empty());
    CHECK_FALSE(r.frames[2].shared);  // a hello
    CHECK_FALSE(r.frames[3].shared);  // too large
    // A payload outlives the decoder and the other frames of its read.
    const auto kept = r.frames[1].shared;
    r = {};
    d = mesh::FrameDecoder(1 << 20);
    CHECK(Bytes(kept.get(), kept.get() + 20) == Bytes(20, 2));
  }
  SECTION("cut at every point, each frame decodes the same, shared only when it came whole") {
    for (std::size_t split = 0; split <= stream.size(); ++split) {
      CAPTURE(split);
      mesh::FrameDecoder d(1 << 20);
      d.share_small_payloads(4096);
      mesh::DecodeResult first;
      mesh::DecodeResult second;
      d.feed(std::span(stream).first(split), first);
      d.feed(std::span(stream).subspan(split), second);
      REQUIRE_FALSE(first.error);
      REQUIRE_FALSE(second.error);
      std::vector<mesh::Frame> all = first.frames;
      all.insert(all.end(), second.frames.begin(), second.frames.end());
      REQUIRE(all.size() == 5);
      for (std::size_t i = 0; i < 5; ++i) {
        const auto body = all[i].body();
        CHECK(Bytes(body.begin(), body.end()) == frames[i].payload);
        CHECK(all[i].topic == frames[i].topic);
      }
    }
  }
}

TEST_CASE("the decoder names what is wrong with a bad header", "[mesh][frame]") {
  CHECK(frame_error_of(header_with(0, 'X')) == "bad magic 0x4b535458 (not a ditask peer?)");
  CHECK(frame_error_of(header_with(4, 1)) == "unsupported wire version 1 (this build speaks 2)");
  CHECK(frame_error_of(header_with(5, 99)) == "unknown frame type 99");
  CHECK(frame_error_of(header_with(5, 0)) == "unknown frame type 0");
  CHECK(frame_error_of(header_with(27, 1)) == "nonzero reserved header field 0x100");
  // An HTTP client on the mesh port.
  // An HTTP client on the mesh port is refused after 4 bytes, without waiting for a whole header.
  CHECK(frame_error_of(bytes_of("GET ")) == "bad magic 0x20544547 (not a ditask peer?)");
  mesh::FrameDecoder d(1024);
  CHECK_FALSE(d.feed(bytes_of("DTS")).error);
  CHECK(d.feed(bytes_of("k")).error == "bad magic 0x6b535444 (not a ditask peer?)");
}

TEST_CASE("an oversized frame is refused from its header alone", "[mesh][frame]") {
  mesh::FrameHeader h{mesh::FrameType::event, 0, 1, 1, 10, 0xFFFF'FFFF};
  const auto header = mesh::encode_header(h);
  mesh::FrameDecoder d(1 << 20);
  auto r = d.feed(header);
  CHECK(r.frames.empty());
  CHECK(r.error == "frame of 4294967305 bytes exceeds the limit of 1048576 bytes");
  CHECK(d.buffered() == 0);
}

TEST_CASE("a decoder is poisoned after an error", "[mesh][frame]") {
  const auto good = mesh::encode(make_frame(mesh::FrameType::ping, "", {}));
  Bytes stream = good;
  const auto bad = header_with(4, 1);  // another wire version
  stream.insert(stream.end(), bad.begin(), bad.end());

  mesh::FrameDecoder d(1024);
  auto r = d.feed(stream);
  CHECK(r.frames.size() == 1);  // the frame before the bad header still counts
  REQUIRE(r.error);
  CHECK(d.poisoned());
  auto again = d.feed(good);
  CHECK(again.frames.empty());
  CHECK(again.error == r.error);
}

TEST_CASE("event arguments round trip as MessagePack", "[mesh][frame]") {
  const Bytes blob{0, 1, 2, 0xff, 0xfe};
  const auto in = ditask::EventArgs::from(3, "hi", blob, std::vector<int>{1, 2},
                                          ditask::kw("reward", 1.5), ditask::kw("raw", blob));
  const auto payload = codec::encode_event_args(in);
  CHECK(payload == ditask::json::to_msgpack(ditask::json{{"a", in.args}, {"k", in.kwargs}}));
  const auto out = codec::decode_event_args(payload);
  CHECK(out.args == in.args);
  CHECK(out.kwargs == in.kwargs);
  CHECK(out.args[2].is_binary());
  CHECK(out.get<Bytes>(2) == blob);
  CHECK(out.get<std::string>(1) == "hi");
  CHECK(out.named().get<double>("reward") == 1.5);
  CHECK(out.named().get<Bytes>("raw") == blob);

  const auto empty = codec::decode_event_args(codec::encode_event_args(ditask::EventArgs{}));
  CHECK(empty.size() == 0);
  CHECK(empty.named().size() == 0);
}

TEST_CASE("malformed event payloads are errors", "[mesh][frame]") {
  using Catch::Matchers::StartsWith;
  const auto decode = [](const Bytes& b) { return codec::decode_event_args(b); };
  const auto msgpack = [](const ditask::json& j) { return ditask::json::to_msgpack(j); };
  CHECK_THROWS_WITH(decode({}),
                    "malformed event payload: not valid MessagePack at byte 0: truncated: 1 more bytes needed, 0 left");
  CHECK_THROWS_WITH(decode({0xc1}), StartsWith("malformed event payload: not valid MessagePack"));
  CHECK_THROWS_WITH(decode({0x92, 0x01}), StartsWith("malformed event payload: not valid"));
  CHECK_THROWS_WITH(decode(msgpack(ditask::json::array({1, 2}))),
                    "malformed event payload: expected a map, got array");
  CHECK_THROWS_WITH(decode(msgpack({{"k", ditask::json::object()}})),
                    "malformed event payload: expected an array 'a' of positional arguments");
  CHECK_THROWS_WITH(decode(msgpack({{"a", ditask::json::array()}, {"k", 1}})),
                    "malformed event payload: expected a map 'k' of named arguments");
  auto trailing = codec::encode_event_args(ditask::EventArgs::from(1));
  trailing.push_back(0x00);
  CHECK_THROWS_AS(decode(trailing), ditask::Error);
  // A million nested arrays would overflow the stack of a recursive parser.
  CHECK_THROWS_WITH(decode(Bytes(1'000'000, 0x91)), Catch::Contains("nested deeper than 256 levels"));
  Bytes deep_ok(200, 0x91);
  deep_ok.push_back(0xc0);
  CHECK_THROWS_WITH(decode(deep_ok), "malformed event payload: expected a map, got array");
}

TEST_CASE("random and mutated input never crashes the codec", "[mesh][frame]") {
  std::mt19937 rng(20261129);
  const auto byte = [&] { return static_cast<std::uint8_t>(rng() & 0xff); };
  const auto below = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };

  Bytes valid;
  for (std::uint64_t i = 0; i < 4; ++i) {
    const auto args = ditask::EventArgs::from(i, "x", ditask::kw("k", Bytes(i, 7)));
    const auto e =
        mesh::encode(make_frame(mesh::FrameType::event, "t", codec::encode_event_args(args), i));
    valid.insert(valid.end(), e.begin(), e.end());
  }
  for (int round = 0; round < 2000; ++round) {
    Bytes input;
    if (round % 2 == 0) {
      input.resize(below(200));
      std::generate(input.begin(), input.end(), byte);
      if (round % 4 == 0 && input.size() >= 4) {  // get past the magic check now and then
        std::copy_n("DTSK", 4, input.begin());
      }
    } else {
      input = valid;
      for (std::size_t m = below(4) + 1; m > 0; --m) {
        input[below(input.size())] = byte();
      }
    }
    mesh::FrameDecoder d(256);
    auto r = feed_chunked(d, input, below(40) + 1);
    std::size_t consumed = 0;
    for (const auto& f : r.frames) {
      consumed += mesh::kHeaderSize + f.topic.size() + f.payload.size();
      CHECK(f.topic.size() + f.payload.size() <= 256);
      decode_args_if_valid(f.payload);
    }
    REQUIRE(consumed <= input.size());
    decode_args_if_valid(input);
  }
}

TEST_CASE("frame: the receive-path MessagePack reader agrees with nlohmann's on every value kind", "[frame]") {
  const ditask::json value = {
      {"a", ditask::json::array({0, 127, 128, 65535, 4294967296ULL, -1, -32, -33, -129, -40000, -5000000000LL, 1.5,
                                 static_cast<double>(3.25F), true, false, nullptr, "", std::string(40, 's'),
                                 std::string(300, 't'), std::string(70000, 'u'),
                                 ditask::json::binary({1, 2, 3}), ditask::json::binary(std::vector<std::uint8_t>(70000, 7)),
                                 ditask::json::binary({9}, 5), ditask::json::array({ditask::json::object()})})},
      {"k", {{"name", "x"}, {std::string(40, 'k'), ditask::json::array()}}}};
  const auto bytes = ditask::json::to_msgpack(value);
  CHECK(codec::read_json(bytes, 16) == ditask::json::from_msgpack(bytes));
  // A count announced far beyond the input is refused before anything is reserved.
  const Bytes lying{0xdd, 0xff, 0xff, 0xff, 0xff, 0x01};
  CHECK_THROWS_WITH(codec::read_json(lying, 16), Catch::Contains("truncated"));
  const Bytes int_key{0x81, 0x01, 0x02};
  CHECK_THROWS_WITH(codec::read_json(int_key, 16), Catch::Contains("not a string"));
}

TEST_CASE("frame: a bye carries its reason and whether retrying could help", "[frame]") {
  const auto plain = mesh::decode_bye(mesh::encode_bye("bye"));
  CHECK(plain.reason == "bye");
  CHECK_FALSE(plain.permanent);
  const auto refused = mesh::decode_bye(mesh::encode_bye("wrong token", true));
  CHECK(refused.reason == "wrong token");
  CHECK(refused.permanent);
  CHECK(mesh::decode_bye(Bytes{0xc1, 0x00}).reason == "no reason given");
  CHECK(mesh::decode_bye(Bytes(100000, 0x91)).reason == "no reason given");
  CHECK(mesh::decode_bye(mesh::encode_bye(std::string(5000, 'r'))).reason.size() == 1024);
}

TEST_CASE("frames: the rest of a large payload is read into it directly, a small or huge one is copied",
          "[frame]") {
  Bytes payload(200000);
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<std::uint8_t>(i * 7);
  }
  const auto wire = mesh::encode(make_frame(mesh::FrameType::event, "task.big", payload, 3));
  mesh::FrameDecoder decoder(1 << 20);
  // The header, the topic and 1000 payload bytes arrive through the read buffer.
  const std::size_t first = mesh::kHeaderSize + 8 + 1000;
  REQUIRE(decoder.feed(std::span(wire).first(first)).frames.empty());
  CHECK(decoder.payload_tail(300000, 1 << 20).empty());  // less than that is missing
  CHECK(decoder.payload_tail(64 * 1024, 100000).empty());  // the payload is above the direct limit
  std::size_t at = first;
  while (true) {
    auto tail = decoder.payload_tail(64 * 1024, 1 << 20);
    REQUIRE(!tail.empty());
    CHECK(tail.size() == wire.size() - at);
    const std::size_t n = std::min<std::size_t>(tail.size(), 70000);  // a short read
    std::copy_n(wire.begin() + static_cast<std::ptrdiff_t>(at), n, tail.begin());
    at += n;
    auto result = decoder.filled(n);
    REQUIRE(!result.error);
    if (at == wire.size()) {
      REQUIRE(result.frames.size() == 1);
      CHECK(result.frames[0].topic == "task.big");
      CHECK(result.frames[0].seq == 3);
      CHECK(result.frames[0].payload == payload);
      break;
    }
    CHECK(result.frames.empty());
    CHECK(decoder.buffered() == at);
  }
  // Afterwards the decoder reads whole frames from the read buffer again.
  CHECK(decoder.payload_tail(1, 1 << 20).empty());
  const auto small = mesh::encode(make_frame(mesh::FrameType::event, "task.s", {1, 2, 3}));
  auto again = decoder.feed(small);
  REQUIRE(again.frames.size() == 1);
  CHECK(again.frames[0].payload == Bytes{1, 2, 3});
}

TEST_CASE("frames: a large payload is read into a kept buffer, and none of that buffer's old bytes show",
          "[frame]") {
  const std::size_t size = 150000;
  Bytes payload(size);
  for (std::size_t i = 0; i < size; ++i) {
    payload[i] = static_cast<std::uint8_t>(i * 13 + 1);
  }
  const auto wire = mesh::encode(make_frame(mesh::FrameType::event, "task.big", payload, 4));
  // Chunk sizes that split the header, the topic and the payload in every way, and reads straight
  // into the payload (payload_tail) for part of the chunks.
  for (const std::size_t chunk : {std::size_t{1000}, std::size_t{70001}, wire.size()}) {
    for (const bool read_direct : {false, true}) {
      // A kept buffer longer than the payload, full of bytes that must not show.
      Bytes kept(size + 5000, 0xee);
      const auto* kept_data = kept.data();
      ditask::detail::recycle_large_buffer(std::move(kept));
      mesh::FrameDecoder decoder(1 << 20);
      std::vector<mesh::Frame> frames;
      std::size_t at = 0;
      while (at < wire.size()) {
        auto tail = read_direct ? decoder.payload_tail(1, 1 << 20) : std::span<std::uint8_t>{};
        mesh::DecodeResult result;
        if (!tail.empty()) {
          const std::size_t n = std::min(tail.size(), chunk);
          std::copy_n(wire.begin() + static_cast<std::ptrdiff_t>(at), n, tail.begin());
          at += n;
          result = decoder.filled(n);
        } else {
          const std::size_t n = std::min(chunk, wire.size() - at);
          result = decoder.feed(std::span(wire).subspan(at, n));
          at += n;
        }
        REQUIRE(!result.error);
        for (auto& frame : result.frames) {
          frames.push_back(std::move(frame));
        }
      }
      INFO("chunk " << chunk << ", direct reads " << read_direct);
      REQUIRE(frames.size() == 1);
      CHECK(frames[0].payload == payload);
      CHECK(frames[0].payload.data() == kept_data);  // the kept buffer, not a new one
    }
  }
}
