// SPDX-License-Identifier: MIT
// A tiny actor/learner loop in one process: a collector middleware emits transitions, a learner
// handler consumes them, and an evaluator runs every third step with a two-phase middleware.
#include <cstdio>
#include <string>

#include <ditask/ditask.hpp>

namespace {

struct Transition {
  int step = 0;
  double reward = 0.0;
};
void to_json(ditask::json& j, const Transition& t) { j = {{"step", t.step}, {"reward", t.reward}}; }
void from_json(const ditask::json& j, Transition& t) {
  j.at("step").get_to(t.step);
  j.at("reward").get_to(t.reward);
}

}  // namespace

int main() try {
  auto& task = ditask::task();
  auto running = task.start({.async_mode = false, .ctx = ditask::Context::online_rl()});

  int learned = 0;
  task.on("transition", [&](Transition t, const ditask::Kwargs& kw) {
    ++learned;
    std::printf("learner: got transition of step %d, reward %.1f (%s)\n", t.step, t.reward,
                kw.get_or<std::string>("source", "?").c_str());
  });

  task.use([&](ditask::Context& ctx) {
    ctx.env_step += 10;
    task.emit("transition", Transition{static_cast<int>(ctx.total_step), 0.5 * static_cast<double>(ctx.total_step)},
              ditask::kw("source", "collector"));
  });
  task.use([&](ditask::Context& ctx) -> ditask::Backward {
    task.sync();  // the learner has seen this step's transition
    ctx.train_iter = learned;
    return [&ctx] {
      if (ctx.total_step % 3 == 2) {
        ctx.last_eval_iter = ctx.train_iter;
        std::printf("evaluator: step %lld, train_iter %lld, env_step %lld\n",
                    static_cast<long long>(ctx.total_step), static_cast<long long>(ctx.train_iter),
                    static_cast<long long>(ctx.env_step));
      }
    };
  });
  task.run(6);
  std::printf("done: %d transitions learned in %lld steps, labels:", learned,
              static_cast<long long>(task.ctx().total_step + 1));
  for (const auto& label : task.labels()) {
    std::printf(" %s", label.c_str());
  }
  std::printf("\n");
  return 0;
} catch (const std::exception& e) {
  ditask::print_error(e);
  return 1;
}
