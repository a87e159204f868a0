// SPDX-License-Identifier: MIT
// Context: keep / renew, OnlineRL keep list, typed user data. Ports DI-engine's test_context.py.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <ditask/ditask.hpp>

TEST_CASE("a kept key survives renew, the others are reset, total_step increments", "[context]") {
  ditask::Context ctx;
  ctx.keep({"keep_me"});
  ctx.set("keep_me", 1);
  ctx.set("not_keep_me", 2);
  ctx.train_iter = 5;

  auto next = ctx.renew();
  CHECK(next.total_step == 1);
  REQUIRE(next.has("keep_me"));
  CHECK(next.get<int>("keep_me") == 1);
  CHECK_FALSE(next.has("not_keep_me"));
  CHECK(next.train_iter == 0);  // fields not kept are reset
  CHECK(next.kept().count("keep_me") == 1);

  // The keep list travels on: the key survives any number of steps.
  auto after = next.renew();
  CHECK(after.total_step == 2);
  REQUIRE(after.has("keep_me"));
  CHECK(after.get<int>("keep_me") == 1);

  // The source context is unchanged.
  CHECK(ctx.total_step == 0);
  CHECK(ctx.has("not_keep_me"));
}

TEST_CASE("keep accepts field names and keys that do not exist yet", "[context]") {
  ditask::Context ctx;
  ctx.keep({"env_step", "later"});
  ctx.env_step = 7;
  ctx.env_episode = 3;
  auto next = ctx.renew();
  CHECK(next.env_step == 7);
  CHECK(next.env_episode == 0);
  CHECK_FALSE(next.has("later"));  // kept once it exists

  next.set("later", std::string("now"));
  auto after = next.renew();
  REQUIRE(after.has("later"));
  CHECK(after.get<std::string>("later") == "now");
}

TEST_CASE("a default Context keeps nothing and has DI-engine's defaults", "[context]") {
  ditask::Context ctx;
  CHECK(ctx.kept().empty());
  CHECK(ctx.total_step == 0);
  CHECK(ctx.last_eval_iter == -1);
  ctx.env_step = 1;
  ctx.env_episode = 2;
  ctx.train_iter = 3;
  ctx.last_eval_iter = 4;
  ctx.last_eval_value = 5.5;
  auto next = ctx.renew();
  CHECK(next.env_step == 0);
  CHECK(next.env_episode == 0);
  CHECK(next.train_iter == 0);
  CHECK(next.last_eval_iter == -1);
  CHECK(next.last_eval_value == 0.0);
}

TEST_CASE("Context::online_rl keeps the online RL counters across renew", "[context]") {
  auto ctx = ditask::Context::online_rl();
  for (const char* key : {"env_step", "env_episode", "train_iter", "last_eval_iter", "last_eval_value"}) {
    CHECK(ctx.kept().count(key) == 1);
  }
  ctx.env_step = 100;
  ctx.env_episode = 10;
  ctx.train_iter = 50;
  ctx.last_eval_iter = 40;
  ctx.last_eval_value = 0.75;
  ctx.set("trajectories", std::vector<int>{1, 2, 3});

  auto next = ctx.renew().renew();
  CHECK(next.total_step == 2);
  CHECK(next.env_step == 100);
  CHECK(next.env_episode == 10);
  CHECK(next.train_iter == 50);
  CHECK(next.last_eval_iter == 40);
  CHECK(next.last_eval_value == 0.75);
  CHECK_FALSE(next.has("trajectories"));
}

TEST_CASE("get of a missing key or of another type throws ditask::Error", "[context]") {
  ditask::Context ctx;
  ctx.set("n", 3);
  CHECK_THROWS_AS(ctx.get<int>("missing"), ditask::Error);
  CHECK_THROWS_AS(ctx.get<std::string>("n"), ditask::Error);
  CHECK_THROWS_AS(ctx.get<std::int64_t>("n"), ditask::Error);  // no conversions: the exact type
  CHECK_THROWS_WITH(ctx.get<int>("missing"), Catch::Contains("missing"));

  const ditask::Context& view = ctx;
  CHECK(view.get<int>("n") == 3);
  CHECK_THROWS_AS(view.get<double>("n"), ditask::Error);

  ctx.get<int>("n") = 4;  // a reference into the context
  CHECK(ctx.get<int>("n") == 4);
}

TEST_CASE("find returns a pointer to the value, or nullptr", "[context]") {
  ditask::Context ctx;
  ctx.set("name", std::string("dqn"));
  CHECK(ctx.find<int>("missing") == nullptr);
  CHECK(ctx.find<int>("name") == nullptr);
  auto* name = ctx.find<std::string>("name");
  REQUIRE(name != nullptr);
  CHECK(*name == "dqn");
  *name = "ppo";
  CHECK(ctx.get<std::string>("name") == "ppo");
}

TEST_CASE("set replaces any earlier value, keys are sorted, erase removes", "[context]") {
  ditask::Context ctx;
  CHECK(ctx.keys().empty());
  ctx.set("b", 1);
  ctx.set("a", 2);
  ctx.set("c", 3);
  CHECK(ctx.keys() == std::vector<std::string>{"a", "b", "c"});

  ctx.set("b", std::string("now a string"));
  CHECK(ctx.get<std::string>("b") == "now a string");
  CHECK(ctx.find<int>("b") == nullptr);

  ctx.erase("a");
  ctx.erase("absent");  // no-op
  CHECK(ctx.keys() == std::vector<std::string>{"b", "c"});
  CHECK_FALSE(ctx.has("a"));
}

TEST_CASE("the task's context starts as given and is renewed by run", "[task][context]") {
  auto& task = ditask::task();
  ditask::StartOptions options;
  auto initial = ditask::Context::online_rl();
  initial.keep({"log"});
  initial.set("log", std::vector<std::int64_t>{});
  initial.set("scratch", 1);
  options.ctx = initial;
  auto running = task.start(options);

  std::vector<bool> scratch_seen;
  task.use([&scratch_seen](ditask::Context& ctx) {
    scratch_seen.push_back(ctx.has("scratch"));
    ++ctx.env_step;
    ctx.get<std::vector<std::int64_t>>("log").push_back(ctx.total_step);
  });
  task.run(3);
  CHECK(task.ctx().total_step == 2);
  CHECK(task.ctx().env_step == 3);
  CHECK(task.ctx().get<std::vector<std::int64_t>>("log") == std::vector<std::int64_t>{0, 1, 2});
  CHECK(scratch_seen == std::vector<bool>{true, false, false});
}

TEST_CASE("start without a context gives a fresh default Context", "[task][context]") {
  auto& task = ditask::task();
  {
    auto running = task.start();
    task.ctx().set("left_over", 1);
    task.ctx().env_step = 9;
  }
  auto running = task.start();
  CHECK_FALSE(task.ctx().has("left_over"));
  CHECK(task.ctx().env_step == 0);
  CHECK(task.ctx().total_step == 0);
  CHECK(task.ctx().kept().empty());
}
