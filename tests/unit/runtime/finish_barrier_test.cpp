// SPDX-License-Identifier: MIT
// The task layer's finish barrier, without a transport: which events count as a peer's finish,
// and when the wait ends (every connected peer incarnation finished, or left).
#include <atomic>
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

RemoteEvent event_from(const char* name, int sender, int attempt, bool remote = true, bool relayed = false) {
  auto meta = std::make_shared<ditask::EventMeta>();
  meta->sender = sender;
  meta->attempt = attempt;
  meta->remote = remote;
  RemoteEvent e;
  e.event = name;
  e.args = ditask::EventArgs::from(true);
  e.meta = meta;
  e.relayed = relayed;
  return e;
}

RemoteEvent notice(const char* name, std::int64_t node = 1) {
  RemoteEvent e;
  e.event = name;
  e.notice = true;
  e.args.emplace().kwargs["node_id"] = node;
  return e;
}

ditask::PeerInfo peer(std::int64_t node, std::int64_t attempt) {
  ditask::PeerInfo p;
  p.node_id = node;
  p.attempt = attempt;
  return p;
}

}  // namespace

TEST_CASE("finish barrier: a peer's own finish counts, relayed, local and other events do not", "[finish]") {
  std::vector<RemoteEvent> batch;
  batch.push_back(event_from("finish", 1, 0));
  batch.push_back(event_from("finish", 2, 0, true, true));  // relayed by a hub for node 2
  batch.push_back(event_from("finish", 0, 0, false));  // this node's own, local
  batch.push_back(event_from("step", 3, 0));
  batch.push_back(notice(ditask::events::peer_joined, 4));
  auto seen = FinishBarrier::scan(batch);
  using Change = FinishBarrier::Seen::Change;
  CHECK(seen.changes == std::vector<Change>{{1, 0, true}, {4, 0, false}});
  CHECK_FALSE(seen.membership_changed);
  batch.push_back(notice(ditask::events::peer_left));
  CHECK(FinishBarrier::scan(batch).membership_changed);
  // A notice named like a task event is still a notice.
  CHECK(FinishBarrier::scan({notice("finish")}).changes.empty());
}

TEST_CASE("finish barrier: a finish whose reason is \"ok\" is seen, relayed or not, and no other", "[finish]") {
  auto with_reason = [](RemoteEvent e, ditask::EventArgs args) {
    e.args = std::move(args);
    return e;
  };
  ditask::EventArgs ok;
  ok.kwargs["reason"] = "ok";
  ditask::EventArgs failed;
  failed.kwargs["reason"] = "failed";
  ditask::EventArgs not_a_string;
  not_a_string.kwargs["reason"] = 1;
  CHECK(FinishBarrier::scan({with_reason(event_from("finish", 1, 0), ok)}).finish_ok);
  CHECK(FinishBarrier::scan({with_reason(event_from("finish", 2, 0, true, true), ok)}).finish_ok);
  CHECK_FALSE(FinishBarrier::scan({with_reason(event_from("finish", 1, 0), failed)}).finish_ok);
  CHECK_FALSE(FinishBarrier::scan({with_reason(event_from("finish", 1, 0), not_a_string)}).finish_ok);
  CHECK_FALSE(FinishBarrier::scan({event_from("finish", 1, 0)}).finish_ok);  // no named arguments
  CHECK_FALSE(FinishBarrier::scan({with_reason(event_from("finished", 1, 0), ok)}).finish_ok);
  CHECK_FALSE(FinishBarrier::scan({with_reason(event_from("finis", 1, 0), ok)}).finish_ok);
  auto n = notice("finish");
  n.args->kwargs["reason"] = "ok";
  CHECK_FALSE(FinishBarrier::scan({n}).finish_ok);  // a notice is never a peer's finish
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

TEST_CASE("finish barrier: a peer that rejoins with the same attempt must finish again", "[finish]") {
  // Restarted by something other than --auto-recover (a pod restart, a relaunched host): its
  // attempt did not change, but its finish before the restart says nothing of the new one.
  FinishBarrier barrier;
  const std::vector<ditask::PeerInfo> connected{peer(1, 0)};
  const auto now = [&] { return connected; };
  barrier.note(FinishBarrier::scan({event_from("finish", 1, 0)}));
  CHECK(barrier.wait(now, 0ms));
  barrier.note(FinishBarrier::scan({notice(ditask::events::peer_left, 1), notice(ditask::events::peer_joined, 1)}));
  CHECK_FALSE(barrier.wait(now, 0ms));
  barrier.note(FinishBarrier::scan({event_from("finish", 1, 0)}));
  CHECK(barrier.wait(now, 0ms));
}

TEST_CASE("finish barrier: a waiter reads the peers once, not again for each finish that leaves others missing",
          "[finish]") {
  // In a job of 32 workers each stopping worker waits for 31 finishes: waking (and copying the
  // peer list) for each of them made 31 context switches per worker while the last workers were
  // still starting.
  FinishBarrier barrier;
  std::vector<ditask::PeerInfo> connected;
  for (std::int64_t node = 1; node <= 30; ++node) {
    connected.push_back(peer(node, 0));
  }
  std::atomic<int> reads{0};
  std::promise<void> waiting;
  const auto now = [&] {
    if (reads.fetch_add(1) == 0) {
      waiting.set_value();
    }
    return connected;
  };
  auto done = std::async(std::launch::async, [&] { return barrier.wait(now, 60s); });
  waiting.get_future().wait();
  for (std::int64_t node = 1; node <= 30; ++node) {
    barrier.note(FinishBarrier::scan({event_from("finish", static_cast<int>(node), 0)}));
  }
  CHECK(done.get());
  CHECK(reads.load() == 1);
}

TEST_CASE("finish barrier: a peer that joins while others are awaited is awaited too", "[finish]") {
  FinishBarrier barrier;
  std::mutex mutex;
  std::vector<ditask::PeerInfo> connected{peer(1, 0)};
  const auto now = [&] {
    std::lock_guard lock(mutex);
    return connected;
  };
  std::promise<void> waiting;
  auto first_read = std::make_shared<std::atomic<bool>>(true);
  const auto now_and_tell = [&] {
    auto peers = now();
    if (first_read->exchange(false)) {
      waiting.set_value();
    }
    return peers;
  };
  auto done = std::async(std::launch::async, [&] { return barrier.wait(now_and_tell, 60s); });
  waiting.get_future().wait();
  {
    std::lock_guard lock(mutex);
    connected.push_back(peer(2, 0));  // node 2 joined while node 1 was awaited
  }
  barrier.note(FinishBarrier::scan({notice(ditask::events::peer_joined, 2)}));
  barrier.note(FinishBarrier::scan({event_from("finish", 1, 0)}));
  // Node 2 has not finished: whenever the waiter looked, it is not done (a waiter that forgot
  // the newcomer would be done by now, or soon).
  CHECK(done.wait_for(0s) == std::future_status::timeout);
  barrier.note(FinishBarrier::scan({event_from("finish", 2, 0)}));
  CHECK(done.get());
}
