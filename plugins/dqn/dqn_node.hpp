// SPDX-License-Identifier: MIT
// One worker of the DQN job (DI-engine's ding/example/dqn.py layout): its settings, the roles it
// plays, and the state its middleware and event handlers share. Handlers run on the task's
// dispatcher thread, middleware on the run() thread: everything mutable is under `mutex`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <mutex>
#include <optional>
#include <vector>

#include <ditask/ditask.hpp>

#include "adam.hpp"
#include "dqn.hpp"

namespace dqn {

struct Settings {
  std::uint64_t seed = 0;
  double stop_value = 195;      ///< DI-engine's stop value for CartPole
  int eval_freq = 40;           ///< train iterations between evaluations
  int eval_episodes = 10;
  int n_sample = 8;             ///< env steps per collector step
  int update_per_collect = 3;   ///< train iterations per learner step
  int batch = 64;
  float lr = 1e-3F;
  float gamma = 0.97F;
  int target_update = 100;      ///< train iterations between target-network copies
  int sync_every = 5;           ///< train iterations between model broadcasts
  std::int64_t max_env_steps = 200000;
  std::size_t buffer = 20000;
  std::chrono::milliseconds wait{60000};  ///< the longest a step waits for a peer
};

/// Reads the module arguments (ditask::ModuleArgs). Errors: ditask::Error naming the argument.
Settings settings_from_args();

/// Who plays which role: from --roles (the peers' role.<name> labels), else dqn.py's layout over
/// the node ids sorted: the first is the learner, the second the evaluator, the rest collectors
/// (one node plays every role; with two, the first is learner and evaluator).
struct Layout {
  bool from_launcher = false;  ///< --roles gave the roles
  std::map<std::int64_t, std::set<std::string>> roles;  ///< by node id, this node included
  /// Computed once the task started (the peers are known). Thread: the run thread.
  static Layout of_job();
  /// Node ids with `role`, this one excluded.
  std::vector<std::int64_t> others_with(const std::string& role) const;
};

/// What a node knows and keeps. Thread: any, under `mutex` (except `layout`, fixed at start).
struct Node {
  explicit Node(const Settings& s);

  Settings s;
  Layout layout;
  bool collector = false, learner = false, evaluator = false;

  std::mutex mutex;
  std::condition_variable changed;  // a model, iteration, transitions or finish arrived
  bool finished = false;            // the job's finish arrived

  // Acting copy of the Q-network (collector, evaluator), its train_iter and the env steps then.
  rl::Mlp acting;
  std::int64_t model_iter = -1;
  std::int64_t model_env_steps = 0;
  long models_received = 0;
  std::int64_t learner_iter = -1;  // the last learner step announced (collectors go on after it)

  // Learner: what collectors sent since the last step, and the counts.
  std::vector<rl::Transition> inbox;
  std::int64_t transitions_received = 0;
  std::vector<std::int64_t> senders;  // collectors that sent transitions, sorted, distinct
};

/// Emits `event` to every other node with `role` (emit_to_role with --roles, else by node id).
template <class... A>
void send_to_role(const Node& node, const std::string& role, const std::string& event, const A&... args) {
  auto& task = ditask::task();
  if (node.layout.from_launcher) {
    task.emit_to_role(role, event, args...);
    return;
  }
  for (const auto id : node.layout.others_with(role)) {
    task.emit_to_node(id, event, args...);
  }
}

/// Registers the handlers of `node`'s roles (model, iteration, transitions, finish).
void register_handlers(Node& node);

/// The middleware of each role, as DI-engine's dqn.py chains them.
ditask::Middleware collector_step(Node& node);
ditask::Middleware learner_step(Node& node);
ditask::Middleware evaluator_step(Node& node);

}  // namespace dqn
