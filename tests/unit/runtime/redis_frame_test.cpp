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

TEST_CASE("redis frame: an event, a sync and a bye round-trip with sender, instance, the process it is for and number",
          "[redis][unit]") {
  std::vector<std::uint8_t> out;
  const auto payload = redis_bytes_of("\x82payload");
  encode_frame(out, FrameKind::event, false, 7, 0xfeedfacecafebeefULL, 0x0123456789abcdefULL, 123456789012ULL,
               "task.step", payload);
  CHECK(out.size() == kFrameHeaderBytes + 9 + payload.size());
  auto f = decode_frame(out);
  REQUIRE(f);
  CHECK(f->kind == FrameKind::event);
  CHECK_FALSE(f->failed);
  CHECK(f->sender == 7);
  CHECK(f->instance == 0xfeedfacecafebeefULL);
  CHECK(f->to == 0x0123456789abcdefULL);
  CHECK(f->seq == 123456789012ULL);
  CHECK(f->topic == "task.step");
  CHECK(std::vector<std::uint8_t>(f->payload.begin(), f->payload.end()) == payload);

  encode_frame(out, FrameKind::bye, true, 3, 1, 9, 42, {}, {});
  f = decode_frame(out);
  REQUIRE(f);
  CHECK(f->kind == FrameKind::bye);
  CHECK(f->failed);
  CHECK(f->to == 9);
  CHECK(f->seq == 42);
  CHECK(f->topic.empty());
  CHECK(f->payload.empty());

  const std::string why = "node 0 (attempt 0) belongs to a job of 3 workers (--world-size), this node to one of 4";
  encode_frame(out, FrameKind::refuse, false, 0, 5, 77, 0, {},
               std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(why.data()), why.size()));
  f = decode_frame(out);
  REQUIRE(f);
  CHECK(f->kind == FrameKind::refuse);
  CHECK(f->to == 77);
  CHECK(std::string(f->payload.begin(), f->payload.end()) == why);
}

TEST_CASE("redis frame: bytes that are not a message are refused", "[redis][unit]") {
  std::vector<std::uint8_t> out;
  encode_frame(out, FrameKind::sync, false, 1, 2, 4, 3, "task.x", {});
  CHECK_FALSE(decode_frame(std::span<const std::uint8_t>(out.data(), kFrameHeaderBytes - 1)));  // too short
  auto bad_kind = out;
  bad_kind[0] = 9;
  CHECK_FALSE(decode_frame(bad_kind));
  auto bad_flags = out;
  bad_flags[1] = 2;
  CHECK_FALSE(decode_frame(bad_flags));
  auto long_topic = out;
  long_topic[34] = 0xff;  // a topic past the end
  CHECK_FALSE(decode_frame(long_topic));
  CHECK_THROWS_AS(encode_frame(out, FrameKind::event, false, 1, 2, 4, 3, std::string(70000, 't'), {}), std::length_error);
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

TEST_CASE("redis frame: a read notice names the sender process whose stream it counts", "[redis][unit]") {
  std::vector<std::uint8_t> out;
  encode_frame(out, FrameKind::read, false, 4, 77, 0x0102030405060708ULL, 12345, {}, {});
  const auto f = decode_frame(out);
  REQUIRE(f);
  CHECK(f->kind == FrameKind::read);
  CHECK(f->sender == 4);
  CHECK(f->instance == 77);
  CHECK(f->to == 0x0102030405060708ULL);
  CHECK(f->seq == 12345);
  CHECK(f->payload.empty());
}

TEST_CASE("redis frame: a sender's window to one receiver opens as the receiver says what it read",
          "[redis][unit]") {
  using ditask::detail::redis::SendWindow;
  SendWindow w;
  CHECK(w.has_room(100, 10));  // nothing unread: one always goes, however large
  w.sent(1, 6);
  CHECK(w.has_room(4, 10));
  CHECK_FALSE(w.has_room(5, 10));
  w.sent(2, 4);
  CHECK(w.unread_bytes() == 10);
  CHECK(w.unread_count() == 2);
  CHECK(w.read_up_to(1) == 1);
  CHECK(w.unread_bytes() == 4);
  CHECK(w.has_room(6, 10));
  CHECK(w.read_up_to(1) == 0);  // said again: nothing changes
  CHECK(w.unread_bytes() == 4);
  w.sent(3, 5);
  CHECK(w.read_up_to(7) == 2);  // numbers past the last sent (counted as lost on the way): all read
  CHECK(w.unread_bytes() == 0);
  w.sent(8, 3);
  CHECK(w.unread_count() == 1);
  w.clear();  // a new receiver process
  CHECK(w.unread_bytes() == 0);
  CHECK(w.unread_count() == 0);
}
