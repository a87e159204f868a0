// SPDX-License-Identifier: MIT
// The task layer's finish barrier, without a transport: which events count as a peer's finish,
// and when the wait ends (every connected peer incarnation finished, or left).
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include <catch2/catch.hpp>

#include "finish_barrier.hpp"

using ditask::detail::FinishBarrier;
using ditask::detail::RemoteEvent;
using namespace std::chrono_literals;

namespace {

RemoteEvent event_from(const char* name, int sender, int attempt, bool remote = true) {
  auto meta = std::make_shared<ditask::EventMeta>();
  meta->sender = sender;
  meta->attempt = attempt;
  meta->remote = remote;
  RemoteEvent e;
  e.event = name;
  e.args = ditask::EventArgs::from(true);
  e.meta = meta;
  return e;
}

RemoteEvent notice(const char* name) {
  RemoteEvent e;
  e.event = name;
  e.notice = true;
  return e;
}

ditask::PeerInfo peer(std::int64_t node, std::int64_t attempt) {
  ditask::PeerInfo p;
  p.node_id = node;
  p.attempt = attempt;
  return p;
}

}  // namespace

TEST_CASE("finish barrier: a peer's own finish counts; relayed, local and other events do not", "[finish]") {
  std::vector<RemoteEvent> batch;
  batch.push_back(event_from("finish", 1, 0));
  batch.push_back(event_from("finish", 2, -1));        // relayed from a node with no link here
  batch.push_back(event_from("finish", 0, 0, false));  // this node's own, local
  batch.push_back(event_from("step", 3, 0));
  batch.push_back(notice(ditask::events::peer_joined));
  auto seen = FinishBarrier::scan(batch);
  CHECK(seen.finished == std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 0}});
  CHECK_FALSE(seen.membership_changed);
  batch.push_back(notice(ditask::events::peer_left));
  CHECK(FinishBarrier::scan(batch).membership_changed);
  // A notice named like a task event is still a notice.
  CHECK(FinishBarrier::scan({notice("finish")}).finished.empty());
}

TEST_CASE("finish barrier: the wait ends once every connected incarnation finished", "[finish]") {
  FinishBarrier barrier;
  std::vector<ditask::PeerInfo> connected{peer(1, 0), peer(2, 0)};
  const auto now = [&] { return connected; };
  CHECK_FALSE(barrier.wait(now, 0ms));
  barrier.note(FinishBarrier::scan({event_from("finish", 1, 0)}));
  CHECK_FALSE(barrier.wait(now, 0ms));
  barrier.note(FinishBarrier::scan({event_from("finish", 2, 0)}));
  CHECK(barrier.wait(now, 0ms));
  // Node 1 restarted: its new incarnation has not finished.
  connected[0].attempt = 1;
  CHECK_FALSE(barrier.wait(now, 0ms));
  CHECK(barrier.wait([] { return std::vector<ditask::PeerInfo>{}; }, 0ms));  // nobody connected
}

TEST_CASE("finish barrier: a waiter wakes for a finish or a leave noted while it waits", "[finish]") {
  FinishBarrier barrier;
  std::mutex mutex;
  std::vector<ditask::PeerInfo> connected{peer(1, 0), peer(2, 0)};
  const auto now = [&] {
    std::lock_guard lock(mutex);
    return connected;
  };
  auto done = std::async(std::launch::async, [&] { return barrier.wait(now, 60s); });
  barrier.note(FinishBarrier::scan({event_from("finish", 1, 0)}));
  {
    std::lock_guard lock(mutex);
    connected.pop_back();  // node 2 left without a finish (the transport dropped it first)
  }
  barrier.note(FinishBarrier::scan({notice(ditask::events::peer_left)}));
  CHECK(done.get());
}
