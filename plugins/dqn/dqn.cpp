// SPDX-License-Identifier: MIT
// DI-engine's ding/example/dqn.py as a ditask module: a learner, an evaluator and collectors on
// CartPole-v1, each a middleware chain chosen by role (task.has_role), exchanging transitions and
// models as events, until the evaluator's greedy reward averaged over 10 episodes reaches 195.
//   ditask --package dqn --parallel-workers 4 --roles learner:0,evaluator:1,collector:2-
// Without --roles: 1 worker plays every role (the one-process pipeline), 2 workers are
// learner+evaluator and collector, more are learner, evaluator and collectors (as dqn.py).
// Module arguments (after --): seed, stop_value, eval_freq, eval_episodes, n_sample,
// update_per_collect, batch, lr, gamma, target_update, sync_every, max_env_steps.
#include <cstdio>
#include <iostream>
#include <string>

#include <ditask/ditask.hpp>

#include "dqn_node.hpp"
#include "peer_barrier.hpp"

namespace {

void summary(const dqn::Node& node, const ditask::Context& ctx) {
  char line[200];
  if (node.learner) {
    std::string senders;
    for (auto n : node.senders) {
      if (!senders.empty()) {
        senders += ',';
      }
      senders += std::to_string(n);
    }
    std::snprintf(line, sizeof line, "learner: done after %lld train iterations, %lld transitions received%s%s",
                  static_cast<long long>(ctx.train_iter), static_cast<long long>(node.transitions_received),
                  senders.empty() ? "" : " from collectors ", senders.c_str());
    std::cout << (std::string(line) + "\n");
  }
  if (node.collector && !node.learner) {
    std::snprintf(line, sizeof line, "collector: done after %lld env steps; %ld models received, the last of train_iter %lld",
                  static_cast<long long>(ctx.env_step), node.models_received, static_cast<long long>(node.model_iter));
    std::cout << (std::string(line) + "\n");
  }
  if (node.evaluator && !node.learner) {
    std::snprintf(line, sizeof line, "evaluator: done; %ld models received, the last of train_iter %lld",
                  node.models_received, static_cast<long long>(node.model_iter));
    std::cout << (std::string(line) + "\n");
  }
  std::cout << std::flush;
}

}  // namespace

DITASK_MAIN(main) {
  const auto settings = dqn::settings_from_args();
  auto& task = ditask::task();
  dqn::Node node(settings);  // before the task: the handlers capture it
  ditask::StartOptions options;
  options.ctx = ditask::Context::online_rl();
  auto running = task.start(options);
  node.layout = dqn::Layout::of_job();
  if (task.roles().empty()) {
    for (const auto& role : node.layout.roles.at(task.router().node_id())) {
      task.add_role(role);  // dqn.py's task.add_role by node id
    }
  }
  node.learner = task.has_role(ditask::role::learner);
  node.collector = task.has_role(ditask::role::collector);
  node.evaluator = task.has_role(ditask::role::evaluator);
  dqn::register_handlers(node);
  if (node.evaluator) {
    task.use(dqn::evaluator_step(node));
  }
  if (node.collector) {
    task.use(dqn::collector_step(node));
  }
  if (node.learner) {
    task.use(dqn::learner_step(node));
  }
  // Everyone's handlers are registered before anyone sends: a barrier over the router's peers.
  dqn::peer_barrier("start", settings.wait);
  task.run();
  std::lock_guard lock(node.mutex);
  summary(node, task.ctx());
}
