// SPDX-License-Identifier: MIT
// Events know their sender: the optional trailing `const ditask::EventMeta&` of a handler, in
// every handler form, for local emits and for a node's own identity (events off the mesh:
// mesh_test.cpp).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "event_bus.hpp"
#include "internal_access.hpp"
#include <ditask/ditask.hpp>

namespace {

/// What the handlers saw (written on the dispatcher thread, read after sync()).
struct Seen {
  std::mutex mutex;
  std::vector<std::string> calls;
  std::vector<ditask::EventMeta> metas;
  void add(std::string call, const ditask::EventMeta& meta) {
    std::lock_guard lock(mutex);
    calls.push_back(std::move(call));
    metas.push_back(meta);
  }
};

}  // namespace

TEST_CASE("event meta: every handler form may take the sender last, and a local emit names this node",
          "[meta]") {
  auto& task = ditask::task();
  auto running = task.start();
  Seen seen;
  task.on("typed", [&](int n, const ditask::EventMeta& meta) { seen.add("typed " + std::to_string(n), meta); });
  task.on("named", [&](int n, const ditask::Kwargs& kw, const ditask::EventMeta& meta) {
    seen.add("named " + std::to_string(n) + kw.get<std::string>("k"), meta);
  });
  task.on("raw", [&](const ditask::EventArgs& a, const ditask::EventMeta& meta) { seen.add("raw " + a.args.dump(), meta); });
  task.on("only", [&](const ditask::EventMeta& meta) { seen.add("only", meta); });
  task.on("typed", [&](int n) { seen.add("plain " + std::to_string(n), ditask::EventMeta{}); });
  task.emit("typed", 1);
  task.emit("named", 2, ditask::kw("k", "v"));
  task.emit("raw", 3, "x");
  task.emit("only");
  task.sync();
  CHECK(seen.calls == std::vector<std::string>{"typed 1", "plain 1", "named 2v", "raw [3,\"x\"]", "only"});
  for (std::size_t i : {std::size_t{0}, std::size_t{2}, std::size_t{3}, std::size_t{4}}) {
    const auto& meta = seen.metas[i];
    CHECK(meta.sender == 0);  // a standalone task is node 0
    CHECK(meta.transport == "local");
    CHECK_FALSE(meta.remote);
    CHECK(meta.attempt == 0);
  }
}

TEST_CASE("event meta: a handler with the wrong arguments before the meta is still reported", "[meta]") {
  auto& task = ditask::task();
  auto running = task.start();
  task.on("typed", [](int, const ditask::EventMeta&) {});
  task.emit("typed", "not a number");
  CHECK_THROWS_AS(task.sync(), ditask::HandlerError);
}

TEST_CASE("event meta: a worker's own events carry its node id, attempt and labels", "[meta]") {
  ditask::Router router;
  ditask::detail::RouterIdentity id;
  id.node_id = 3;
  id.attempt = 2;
  id.labels = {"role.learner", "gpu"};
  ditask::detail::RouterAccess::activate(router, id);
  const auto meta = ditask::detail::RouterAccess::local_meta(router);
  CHECK(meta->sender == 3);
  CHECK(meta->attempt == 2);
  CHECK(meta->labels == std::vector<std::string>{"gpu", "node.3", "role.learner"});
  CHECK(meta->transport == "local");
  CHECK_FALSE(meta->remote);
  ditask::detail::RouterAccess::deactivate(router);
  CHECK(ditask::detail::RouterAccess::local_meta(router)->sender == 0);
}

TEST_CASE("event meta: the bus hands each handler its event's sender, kept events and notices included",
          "[meta]") {
  auto bus = std::make_shared<ditask::detail::EventBus>([](const std::string&, std::exception_ptr) {});
  auto local = std::make_shared<ditask::EventMeta>();
  local->sender = 5;
  bus->set_local_meta(local);
  bus->start();
  auto peer = std::make_shared<ditask::EventMeta>();
  peer->sender = 7;
  peer->attempt = 1;
  peer->transport = "mesh";
  peer->remote = true;
  std::vector<ditask::detail::RemoteEvent> events(2);
  events[0].event = "e";
  events[0].args = ditask::EventArgs::from(1);
  events[0].meta = peer;
  events[1].event = "e";
  events[1].args = ditask::EventArgs::from(2);  // a runtime notice: no meta, so this node's
  bus->post_remote(std::move(events));          // kept: no handler yet, the window is open
  std::mutex mutex;
  std::vector<std::pair<int, std::int64_t>> seen;  // (argument, sender)
  auto handlers = ditask::detail::make_handlers([&](int n, const ditask::EventMeta& meta) {
    std::lock_guard lock(mutex);
    seen.emplace_back(n, meta.sender);
  });
  bus->add("e", std::move(handlers.raw), false, std::move(handlers.packed));
  bus->post("e", ditask::EventArgs::from(3));
  bus->drain();
  bus->stop();
  CHECK(seen == std::vector<std::pair<int, std::int64_t>>{{1, 7}, {2, 5}, {3, 5}});
}
