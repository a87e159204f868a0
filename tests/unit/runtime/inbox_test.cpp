// SPDX-License-Identifier: MIT
// A transport's inbox, without a transport: what comes before the first task waits for it,
// what comes after a detach is acknowledged as unhandled.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "transport/inbox.hpp"

namespace {

// Records the receipts a test's events are done with.
struct RecordingReceipt final : ditask::detail::Receipt {
  std::vector<std::pair<std::uint64_t, bool>> done_with;
  void done(std::uint64_t seq, std::size_t /*bytes*/, bool handled) noexcept override {
    done_with.emplace_back(seq, handled);
  }
};

std::vector<ditask::detail::RemoteEvent> inbox_events(const std::vector<std::string>& names,
                                                      const std::shared_ptr<RecordingReceipt>& receipt) {
  std::vector<ditask::detail::RemoteEvent> out;
  std::uint64_t seq = 0;
  for (const auto& name : names) {
    ditask::detail::RemoteEvent e;
    e.event = name;
    e.receipt = receipt;
    e.seq = ++seq;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

TEST_CASE("inbox: events before the first attach wait for it, in order, later ones go straight through",
          "[inbox][unit]") {
  ditask::detail::Inbox inbox;
  auto receipt = std::make_shared<RecordingReceipt>();
  inbox.hand_over(inbox_events({"a", "b"}, receipt));
  inbox.hand_over(inbox_events({"c"}, receipt));
  std::vector<std::string> seen;
  inbox.attach([&](std::vector<ditask::detail::RemoteEvent>&& events) {
    for (const auto& e : events) {
      seen.push_back(e.event);
    }
  });
  CHECK(seen == std::vector<std::string>{"a", "b", "c"});
  inbox.hand_over(inbox_events({"d"}, receipt));
  CHECK(seen == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(receipt->done_with.empty());  // the sink owns the receipts of what it got
}

TEST_CASE("inbox: after a detach events are acknowledged as unhandled, and a new attach gets only new ones",
          "[inbox][unit]") {
  ditask::detail::Inbox inbox;
  std::vector<std::string> seen;
  auto sink = [&](std::vector<ditask::detail::RemoteEvent>&& events) {
    for (const auto& e : events) {
      seen.push_back(e.event);
    }
  };
  inbox.attach(sink);
  inbox.detach();
  auto receipt = std::make_shared<RecordingReceipt>();
  inbox.hand_over(inbox_events({"x", "y"}, receipt));
  CHECK(receipt->done_with == std::vector<std::pair<std::uint64_t, bool>>{{1, false}, {2, false}});
  inbox.attach(sink);
  inbox.hand_over(inbox_events({"z"}, receipt));
  CHECK(seen == std::vector<std::string>{"z"});
}

TEST_CASE("transport counters: a snapshot reads each counter", "[inbox][unit]") {
  ditask::detail::TransportCounters c;
  ++c.sent;
  c.acked += 2;
  ++c.received;
  c.lost += 3;
  ++c.dropped;
  c.unhandled += 4;
  const auto s = c.snapshot();
  CHECK(s.sent == 1);
  CHECK(s.acked == 2);
  CHECK(s.received == 1);
  CHECK(s.lost == 3);
  CHECK(s.dropped == 1);
  CHECK(s.unhandled == 4);
}
