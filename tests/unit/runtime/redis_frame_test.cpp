// SPDX-License-Identifier: MIT
// The Redis transport's messages: what goes on a peer's channel round-trips exactly, malformed
// bytes are refused, and a receiver's count of each sender's numbers finds exactly what was lost.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "redis/redis_frame.hpp"

namespace {

using ditask::detail::redis::decode_frame;
using ditask::detail::redis::encode_frame;
using ditask::detail::redis::FrameKind;
using ditask::detail::redis::kFrameHeaderBytes;
using ditask::detail::redis::SequenceCheck;

std::vector<std::uint8_t> redis_bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

}  // namespace

TEST_CASE("redis frame: an event, a sync and a bye round-trip with sender, instance and number",
          "[redis][unit]") {
  std::vector<std::uint8_t> out;
  const auto payload = redis_bytes_of("\x82payload");
  encode_frame(out, FrameKind::event, false, 7, 0xfeedfacecafebeefULL, 123456789012ULL, "task.step", payload);
  CHECK(out.size() == kFrameHeaderBytes + 9 + payload.size());
  auto f = decode_frame(out);
  REQUIRE(f);
  CHECK(f->kind == FrameKind::event);
  CHECK_FALSE(f->failed);
  CHECK(f->sender == 7);
  CHECK(f->instance == 0xfeedfacecafebeefULL);
  CHECK(f->seq == 123456789012ULL);
  CHECK(f->topic == "task.step");
  CHECK(std::vector<std::uint8_t>(f->payload.begin(), f->payload.end()) == payload);

  encode_frame(out, FrameKind::bye, true, 3, 1, 42, {}, {});
  f = decode_frame(out);
  REQUIRE(f);
  CHECK(f->kind == FrameKind::bye);
  CHECK(f->failed);
  CHECK(f->seq == 42);
  CHECK(f->topic.empty());
  CHECK(f->payload.empty());
}

TEST_CASE("redis frame: bytes that are not a message are refused", "[redis][unit]") {
  std::vector<std::uint8_t> out;
  encode_frame(out, FrameKind::sync, false, 1, 2, 3, "task.x", {});
  CHECK_FALSE(decode_frame(std::span<const std::uint8_t>(out.data(), kFrameHeaderBytes - 1)));  // too short
  auto bad_kind = out;
  bad_kind[0] = 9;
  CHECK_FALSE(decode_frame(bad_kind));
  auto bad_flags = out;
  bad_flags[1] = 2;
  CHECK_FALSE(decode_frame(bad_flags));
  auto long_topic = out;
  long_topic[26] = 0xff;  // a topic past the end
  CHECK_FALSE(decode_frame(long_topic));
  CHECK_THROWS_AS(encode_frame(out, FrameKind::event, false, 1, 2, 3, std::string(70000, 't'), {}), std::length_error);
}

TEST_CASE("redis frame: a receiver's count of one sender's numbers names exactly what never came",
          "[redis][unit]") {
  SequenceCheck check;
  auto first = check.on_event(1);
  CHECK(first.deliver);
  CHECK(first.missing == 0);
  auto gap = check.on_event(5);  // 2, 3, 4 were lost
  CHECK(gap.deliver);
  CHECK(gap.missing == 3);
  auto old = check.on_event(3);  // late or repeated: not delivered twice
  CHECK_FALSE(old.deliver);
  CHECK(old.missing == 0);
  CHECK(check.on_sent_so_far(5) == 0);  // the sender's sync after a reconnect: nothing more
  CHECK(check.on_sent_so_far(8) == 3);  // 6, 7, 8 were in flight when a connection dropped
  CHECK(check.on_event(9).missing == 0);
  CHECK(check.on_sent_so_far(2) == 0);
}
