// SPDX-License-Identifier: MIT
// The Redis transport's hellos and interest notices: what a process says round-trips, and the
// newest interest change wins whatever order its messages arrive in (a presence key read on one
// connection, a notice on the other: CI once saw 50 events sent to a peer that had said it no
// longer wanted them, because an older hello came after the notice and undid it).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "redis/redis_presence.hpp"

namespace {

using ditask::detail::PeerRecord;
using ditask::detail::redis::hello_text;
using ditask::detail::redis::interest_notice_text;
using ditask::detail::redis::parse_presence;
using ditask::detail::redis::PeerInterest;

const std::set<std::string> kWanted{"wanted", "mark"};

}  // namespace

TEST_CASE("redis presence: a hello and a notice round trip with their change numbers", "[unit][redis]") {
  const PeerRecord self{3, 2, 77, {"node.3", "role.learner"}, ""};
  const auto hello = parse_presence(hello_text(self, PeerInterest{4, kWanted}));
  CHECK_FALSE(hello.notice);
  CHECK(hello.peer.node == 3);
  CHECK(hello.peer.attempt == 2);
  CHECK(hello.peer.instance == 77);
  CHECK(hello.peer.labels == self.labels);
  CHECK(hello.interest.version == 4);
  CHECK(hello.interest.names == kWanted);
  const auto all = parse_presence(hello_text(self, PeerInterest{}));
  CHECK_FALSE(all.interest.names.has_value());
  const auto notice = parse_presence(interest_notice_text(3, 77, PeerInterest{5, std::nullopt}));
  CHECK(notice.notice);
  CHECK(notice.peer.node == 3);
  CHECK(notice.peer.instance == 77);
  CHECK(notice.interest.version == 5);
  CHECK_FALSE(notice.interest.names.has_value());
}

TEST_CASE("redis presence: a message without a change number (an older ditask) is change 0", "[unit][redis]") {
  const auto m = parse_presence(R"({"node":1,"attempt":0,"instance":9,"labels":["node.1"],"topics":["a"]})");
  CHECK(m.interest.version == 0);
  CHECK(m.interest.names == std::set<std::string>{"a"});
  CHECK_THROWS(parse_presence(R"({"node":1})"));
  CHECK_THROWS(parse_presence("not json"));
}

TEST_CASE("redis presence: an older hello arriving after a newer notice does not undo it", "[unit][redis]") {
  // The peer's first hello said "all" (change 0); it then handled only two events (change 1).
  const PeerRecord peer{1, 0, 9, {"node.1"}, ""};
  const auto old_hello = parse_presence(hello_text(peer, PeerInterest{}));
  const auto newer = parse_presence(interest_notice_text(1, 9, PeerInterest{1, kWanted}));
  SECTION("notice first, then the hello a presence key read gave before the change") {
    PeerInterest seen;
    CHECK(seen.offer(newer.interest.version, newer.interest.names));
    CHECK_FALSE(seen.offer(old_hello.interest.version, old_hello.interest.names));
    CHECK(seen.names == kWanted);
    CHECK(seen.version == 1);
  }
  SECTION("in their own order") {
    PeerInterest seen;
    CHECK(seen.offer(old_hello.interest.version, old_hello.interest.names));
    CHECK(seen.offer(newer.interest.version, newer.interest.names));
    CHECK(seen.names == kWanted);
  }
  SECTION("the same change twice (a hello re-read after the notice) is taken again, unchanged") {
    PeerInterest seen;
    CHECK(seen.offer(1, kWanted));
    CHECK(seen.offer(1, kWanted));
    CHECK(seen.names == kWanted);
  }
}
