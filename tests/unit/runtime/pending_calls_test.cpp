// SPDX-License-Identifier: MIT
// The table of calls waiting for their answer: removal hands the state over once, and one pass
// finds the calls past their deadline and the next deadline (the service thread's alarm).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "ditask/rpc_future.hpp"
#include "rpc/pending_calls.hpp"

namespace {

using ditask::detail::CallState;
using ditask::detail::PendingCalls;
using namespace std::chrono_literals;

}  // namespace

TEST_CASE("pending calls: a removed call's state is handed over once, then it is not pending", "[rpc][unit]") {
  PendingCalls pending;
  const auto state = std::make_shared<CallState>();
  pending.add(7, PendingCalls::Call{state, 1, PendingCalls::Clock::time_point::max()});
  pending.add(8, PendingCalls::Call{std::make_shared<CallState>(), 2, PendingCalls::Clock::now() + 1h});
  CHECK(pending.size() == 2);
  CHECK(pending.remove(7) == state);
  CHECK(pending.remove(7) == nullptr);  // ended already (a late reply, or a timeout after the answer)
  CHECK(pending.remove(99) == nullptr);
  CHECK(pending.size() == 1);
  std::vector<std::int64_t> nodes;
  pending.for_each([&](std::uint64_t, const PendingCalls::Call& call) { nodes.push_back(call.node); });
  CHECK(nodes == std::vector<std::int64_t>{2});
}

TEST_CASE("pending calls: one pass finds the calls past their deadline and the next deadline", "[rpc][unit]") {
  PendingCalls pending;
  const auto t = PendingCalls::Clock::now();
  std::vector<std::uint64_t> expired;
  CHECK(pending.expired(t, expired) == PendingCalls::Clock::time_point::max());  // nothing pending
  CHECK(expired.empty());
  // Deadlines out of the order of the ids: a shorter timeout after a longer one.
  pending.add(1, PendingCalls::Call{std::make_shared<CallState>(), 1, t + 30ms});
  pending.add(2, PendingCalls::Call{std::make_shared<CallState>(), 1, t + 10ms});
  pending.add(3, PendingCalls::Call{std::make_shared<CallState>(), 1, PendingCalls::Clock::time_point::max()});
  pending.add(4, PendingCalls::Call{std::make_shared<CallState>(), 1, t + 20ms});
  CHECK(pending.expired(t, expired) == t + 10ms);
  CHECK(expired.empty());
  CHECK(pending.expired(t + 20ms, expired) == t + 30ms);  // at its deadline a call has expired
  std::sort(expired.begin(), expired.end());
  CHECK(expired == std::vector<std::uint64_t>{2, 4});
  expired.clear();
  pending.remove(2);
  pending.remove(4);
  pending.remove(1);
  CHECK(pending.expired(t + 1h, expired) == PendingCalls::Clock::time_point::max());  // a call without one never expires
  CHECK(expired.empty());
}
