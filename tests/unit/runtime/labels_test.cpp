// SPDX-License-Identifier: MIT
// Labels, roles, the router's identity and the task lifecycle (start / Running / stop).
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "internal_access.hpp"
#include <ditask/ditask.hpp>

namespace {

using Labels = std::set<std::string>;

/// Deactivates the router when destroyed. Declare it before the Running guard, so the task
/// stops first and the router is inactive again for the next test, even after a failed REQUIRE.
struct DeactivateRouter {
  DeactivateRouter() = default;
  DeactivateRouter(const DeactivateRouter&) = delete;
  DeactivateRouter& operator=(const DeactivateRouter&) = delete;
  ~DeactivateRouter() { ditask::detail::RouterAccess::deactivate(ditask::task().router()); }
};

}  // namespace

TEST_CASE("a standalone task is labelled standalone, plus async and the start labels", "[task][labels]") {
  auto& task = ditask::task();
  SECTION("sync mode") {
    auto running = task.start();
    CHECK(task.labels() == Labels{"standalone"});
  }
  SECTION("async mode") {
    ditask::StartOptions options;
    options.async_mode = true;
    auto running = task.start(options);
    CHECK(task.labels() == Labels{"standalone", "async"});
  }
  SECTION("start labels") {
    ditask::StartOptions options;
    options.async_mode = true;
    options.labels = {"collector", "gpu"};
    auto running = task.start(options);
    CHECK(task.labels() == Labels{"standalone", "async", "collector", "gpu"});
  }
}

TEST_CASE("match_labels uses fnmatch globs", "[task][labels]") {
  auto& task = ditask::task();
  ditask::StartOptions options;
  options.labels = {"node-type.learner"};
  auto running = task.start(options);
  CHECK(task.match_labels("standalone"));
  CHECK(task.match_labels("stand*"));
  CHECK(task.match_labels("s?andalone"));
  CHECK(task.match_labels("node-type.*"));
  CHECK_FALSE(task.match_labels("node.*"));
  CHECK_FALSE(task.match_labels("stand"));
  CHECK_FALSE(task.match_labels("distributed"));
  CHECK(task.match_labels(std::vector<std::string>{"node.*", "stand*"}));
  CHECK_FALSE(task.match_labels(std::vector<std::string>{"node.*", "async"}));
  CHECK_FALSE(task.match_labels(std::vector<std::string>{}));
}

TEST_CASE("has_role is true for every role until one is added, then membership", "[task][roles]") {
  auto& task = ditask::task();
  {
    auto running = task.start();
    CHECK(task.roles().empty());
    CHECK(task.has_role(ditask::role::learner));
    CHECK(task.has_role(ditask::role::collector));
    CHECK(task.has_role("anything"));

    task.add_role(ditask::role::learner);
    CHECK(task.roles() == Labels{"learner"});
    CHECK(task.has_role(ditask::role::learner));
    CHECK_FALSE(task.has_role(ditask::role::collector));
    CHECK_FALSE(task.has_role(ditask::role::evaluator));

    task.add_role(ditask::role::evaluator);
    CHECK(task.has_role(ditask::role::evaluator));
    CHECK(task.roles() == Labels{"learner", "evaluator"});
  }
  auto running = task.start();  // stop dropped the roles
  CHECK(task.roles().empty());
  CHECK(task.has_role(ditask::role::fetcher));
}

TEST_CASE("the router is inactive in a plain process", "[task][router]") {
  auto& task = ditask::task();
  auto running = task.start();
  auto& router = task.router();
  CHECK_FALSE(router.is_active());
  CHECK(router.node_id() == 0);
  CHECK(router.local_id() == 0);
  CHECK(router.parallel_workers() == 1);
  CHECK(router.labels().empty());
}

TEST_CASE("an active router labels the task distributed, node.<id> and the router labels",
          "[task][router][labels]") {
  auto& task = ditask::task();
  DeactivateRouter deactivate_at_end;
  ditask::detail::RouterIdentity identity;
  identity.node_id = 3;
  identity.local_id = 1;
  identity.parallel_workers = 2;
  identity.labels = {"learner", "gpu"};
  ditask::detail::RouterAccess::activate(task.router(), identity);

  CHECK(task.router().is_active());
  CHECK(task.router().node_id() == 3);
  CHECK(task.router().local_id() == 1);
  CHECK(task.router().parallel_workers() == 2);
  CHECK(task.router().labels() == Labels{"learner", "gpu"});

  {
    ditask::StartOptions options;
    options.labels = {"extra"};
    auto running = task.start(options);  // labels are computed at start
    CHECK(task.labels() == Labels{"distributed", "node.3", "learner", "gpu", "extra"});
    CHECK(task.match_labels("node.*"));
    CHECK(task.match_labels("node.3"));
    CHECK_FALSE(task.match_labels("node.4"));
    CHECK_FALSE(task.match_labels("standalone"));
  }

  ditask::detail::RouterAccess::deactivate(task.router());
  CHECK_FALSE(task.router().is_active());
  CHECK(task.router().node_id() == 0);
  CHECK(task.router().labels().empty());
  auto running = task.start();  // restarted: the labels are recomputed
  CHECK(task.labels() == Labels{"standalone"});
}

TEST_CASE("the Running guard stops the task when destroyed", "[task][lifecycle]") {
  auto& task = ditask::task();
  REQUIRE_FALSE(task.running());
  {
    auto running = task.start();
    CHECK(task.running());
    CHECK_FALSE(task.async_mode());
  }
  CHECK_FALSE(task.running());

  {
    ditask::StartOptions options;
    options.async_mode = true;
    auto running = task.start(options);
    CHECK(task.async_mode());
    auto moved = std::move(running);  // the moved-from guard does nothing
  }
  CHECK_FALSE(task.running());

  auto running = task.start();
  running.stop();
  CHECK_FALSE(task.running());
  running.stop();  // idempotent
  task.stop();
  CHECK_FALSE(task.running());
}

TEST_CASE("start while running or with no async workers throws ditask::Error", "[task][lifecycle]") {
  auto& task = ditask::task();
  {
    auto running = task.start();
    CHECK_THROWS_AS(task.start(), ditask::Error);
    CHECK(task.running());  // the failed start left the running task alone
    task.on("still", [](const ditask::EventArgs&) {});
    CHECK(ditask::detail::TaskAccess::handler_count(task, "still") == 1);
  }
  CHECK_FALSE(task.running());

  ditask::StartOptions options;
  options.n_async_workers = 0;
  CHECK_THROWS_AS(task.start(options), ditask::Error);
  CHECK_FALSE(task.running());
}

TEST_CASE("start resets finish, middleware and the context", "[task][lifecycle]") {
  auto& task = ditask::task();
  int calls = 0;
  {
    auto running = task.start();
    task.use([&calls](ditask::Context&) { ++calls; });
    task.run(1);
    REQUIRE(task.finish());
    REQUIRE(calls == 1);
  }
  auto running = task.start();
  CHECK_FALSE(task.finish());
  task.run(5);  // no middleware left: returns at once
  CHECK(calls == 1);
  CHECK(task.ctx().total_step == 0);
}
