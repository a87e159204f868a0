// SPDX-License-Identifier: MIT
// The DQN job's roles as middleware, chosen by role the way DI-engine's dqn.py chains them, and
// the two exchangers between them (DI-engine's ContextExchanger and ModelExchanger), as events:
//   collector -> learner    "transitions" (node id, binary transitions)   emit_to_role("learner")
//   learner -> collectors   "iter" (the learner's step)                   emit_to_role("collector")
//   learner -> collectors,  "model" (binary weights, env steps)           emit_to_role(...), every
//              evaluator                                                  sync_every iterations
// A node with several roles (one process) hands these over in memory instead.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include "dqn_node.hpp"

namespace dqn {
namespace {

using Lock = std::unique_lock<std::mutex>;
using Clock = std::chrono::steady_clock;

void say(const std::string& line) { std::cout << (line + "\n") << std::flush; }

/// Waits (under `lock`) until `ready()` or the job's finish; false on finish. Errors: a timeout,
/// naming `what`.
template <class P>
bool wait_or_finish(Node& node, Lock& lock, P ready, const char* what) {
  if (!node.changed.wait_for(lock, node.s.wait, [&] { return node.finished || ready(); })) {
    throw std::runtime_error(std::string("no ") + what + " within " + std::to_string(node.s.wait.count()) + " ms");
  }
  return !node.finished;
}

void adopt_model(Node& node, const rl::Weights& w, std::int64_t env_steps) {
  node.acting.params() = w.params;
  node.model_iter = w.version;
  node.model_env_steps = env_steps;
  ++node.models_received;
}

}  // namespace

Settings settings_from_args() {
  const ditask::ModuleArgs p({"seed", "stop_value", "eval_freq", "eval_episodes", "n_sample",
                                      "update_per_collect", "batch", "lr", "gamma", "target_update", "sync_every",
                                      "max_env_steps"});
  Settings s;
  s.seed = static_cast<std::uint64_t>(p.integer("seed", 0));
  s.stop_value = p.number("stop_value", s.stop_value);
  s.eval_freq = static_cast<int>(p.integer("eval_freq", s.eval_freq));
  s.eval_episodes = static_cast<int>(p.integer("eval_episodes", s.eval_episodes));
  s.n_sample = static_cast<int>(p.integer("n_sample", s.n_sample));
  s.update_per_collect = static_cast<int>(p.integer("update_per_collect", s.update_per_collect));
  s.batch = static_cast<int>(p.integer("batch", s.batch));
  s.lr = static_cast<float>(p.number("lr", s.lr));
  s.gamma = static_cast<float>(p.number("gamma", s.gamma));
  s.target_update = static_cast<int>(p.integer("target_update", s.target_update));
  s.sync_every = static_cast<int>(p.integer("sync_every", s.sync_every));
  s.max_env_steps = p.integer("max_env_steps", s.max_env_steps);
  if (s.eval_freq < 1 || s.eval_episodes < 1 || s.n_sample < 1 || s.batch < 1 || s.sync_every < 1 ||
      s.target_update < 1 || s.update_per_collect < 1) {
    throw std::invalid_argument("eval_freq, eval_episodes, n_sample, batch, sync_every, target_update and "
                                "update_per_collect must be at least 1");
  }
  return s;
}

Layout Layout::of_job() {
  auto& task = ditask::task();
  Layout l;
  const auto me = task.router().node_id();
  l.from_launcher = !task.router().roles().empty();
  if (l.from_launcher) {
    l.roles[me] = task.router().roles();
    for (const auto& peer : task.router().peers()) {
      for (const auto& label : peer.labels) {
        if (label.rfind("role.", 0) == 0) {
          l.roles[peer.node_id].insert(label.substr(5));
        }
      }
    }
    return l;
  }
  std::vector<std::int64_t> ids{me};
  for (const auto& peer : task.router().peers()) {
    ids.push_back(peer.node_id);
  }
  std::sort(ids.begin(), ids.end());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto& r = l.roles[ids[i]];
    if (ids.size() == 1) {
      r = {ditask::role::learner, ditask::role::evaluator, ditask::role::collector};
    } else if (i == 0) {
      r = {ditask::role::learner};
      if (ids.size() == 2) {
        r.insert(ditask::role::evaluator);
      }
    } else {
      r = {i == 1 && ids.size() > 2 ? ditask::role::evaluator : ditask::role::collector};
    }
  }
  return l;
}

std::vector<std::int64_t> Layout::others_with(const std::string& role) const {
  const auto me = ditask::task().router().node_id();
  std::vector<std::int64_t> out;
  for (const auto& [id, set] : roles) {
    if (id != me && set.count(role) != 0) {
      out.push_back(id);
    }
  }
  return out;
}

Node::Node(const Settings& settings) : s(settings), acting(rl::q_sizes(), rl::Rng::derive(settings.seed, 1)) {}

void register_handlers(Node& node) {
  auto& task = ditask::task();
  task.on(ditask::events::finish, [&node](const ditask::EventArgs&) {
    {
      std::lock_guard lock(node.mutex);
      node.finished = true;
    }
    node.changed.notify_all();
  });
  if (node.learner) {
    task.on("transitions", [&node](std::int64_t from, rl::Bytes bytes) {
      auto ts = rl::decode_transitions(bytes);
      {
        std::lock_guard lock(node.mutex);
        node.transitions_received += static_cast<std::int64_t>(ts.size());
        node.inbox.insert(node.inbox.end(), ts.begin(), ts.end());
        if (!std::binary_search(node.senders.begin(), node.senders.end(), from)) {
          node.senders.insert(std::upper_bound(node.senders.begin(), node.senders.end(), from), from);
        }
      }
      node.changed.notify_all();
    });
    return;  // a learner's own acting copy is its online network (learner_step)
  }
  task.on("model", [&node](rl::Bytes bytes, std::int64_t env_steps) {
    const auto w = rl::decode_weights(bytes);
    {
      std::lock_guard lock(node.mutex);
      if (static_cast<std::int64_t>(w.version) > node.model_iter) {
        adopt_model(node, w, env_steps);
      }
    }
    node.changed.notify_all();
  });
  task.on("iter", [&node](std::int64_t iter) {
    {
      std::lock_guard lock(node.mutex);
      node.learner_iter = std::max(node.learner_iter, iter);
    }
    node.changed.notify_all();
  });
}

// Collector: n_sample epsilon-greedy steps with the latest model, then the transitions to the
// learner; the next step waits for the learner's next iteration (DI-engine's collectors wait for
// the learner's context the same way), so collectors never run ahead of training.
ditask::Middleware collector_step(Node& node) {
  struct Env {
    rl::CartPole env;
    rl::CartState state;
    rl::Rng rng;
    rl::EpsilonSchedule eps;
    std::int64_t waited_for = -1;
    long episodes = 0;
  };
  const auto me = static_cast<std::uint64_t>(ditask::task().router().node_id());
  auto env = std::make_shared<Env>(Env{rl::CartPole(rl::Rng::derive(node.s.seed, me, 10)), {},
                                       rl::Rng(rl::Rng::derive(node.s.seed, me, 11)), {}, -1, 0});
  env->state = env->env.reset();
  return [&node, env, me](ditask::Context& ctx) -> ditask::Backward {
    std::optional<rl::Mlp> acting;
    {
      Lock lock(node.mutex);
      if (!node.learner && ctx.total_step > 0 &&
          !wait_or_finish(node, lock, [&] { return node.learner_iter > env->waited_for; }, "iteration from the learner")) {
        return nullptr;
      }
      env->waited_for = node.learner_iter;
      acting = node.acting;
    }
    std::vector<rl::Transition> batch;
    for (int k = 0; k < node.s.n_sample; ++k) {
      const int a = rl::epsilon_greedy(*acting, env->state, env->eps.at(ctx.env_step), env->rng);
      const auto r = env->env.step(a);
      rl::Transition t;
      for (std::size_t i = 0; i < 4; ++i) {
        t.state[i] = static_cast<float>(env->state[i]);
        t.next[i] = static_cast<float>(r.state[i]);
      }
      t.action = static_cast<std::uint8_t>(a);
      t.reward = static_cast<float>(r.reward);
      t.done = r.terminated;
      batch.push_back(t);
      ++ctx.env_step;
      if (r.done()) {
        ++env->episodes;
        env->state = env->env.reset();
      } else {
        env->state = r.state;
      }
    }
    if (node.learner) {  // one process: the learner is here
      std::lock_guard lock(node.mutex);
      node.inbox.insert(node.inbox.end(), batch.begin(), batch.end());
      node.transitions_received += static_cast<std::int64_t>(batch.size());
    } else {
      send_to_role(node, ditask::role::learner, "transitions", static_cast<std::int64_t>(me),
                   rl::encode_transitions(static_cast<std::uint32_t>(ctx.env_step), batch));
    }
    return nullptr;
  };
}

// Learner: takes what the collectors sent, trains update_per_collect Double DQN iterations once
// the buffer holds a batch, announces each step's iteration and, every sync_every iterations,
// sends the model to the collectors and the evaluator.
ditask::Middleware learner_step(Node& node) {
  struct Learning {
    rl::Mlp online;
    rl::Mlp target;
    rl::Adam adam;
    rl::ReplayBuffer buffer;
    rl::Rng rng;
    std::int64_t sent_model_at = -1;
    float loss = 0;
  };
  const rl::Mlp start = [&node] {
    std::lock_guard guard(node.mutex);  // node.acting is the start of the online network
    return node.acting;
  }();
  auto l = std::make_shared<Learning>(Learning{start, start, rl::Adam(start.size(), node.s.lr),
                                               rl::ReplayBuffer(node.s.buffer), rl::Rng(rl::Rng::derive(node.s.seed, 3)),
                                               -1, 0});
  return [&node, l](ditask::Context& ctx) -> ditask::Backward {
    std::vector<rl::Transition> fresh;
    std::int64_t env_steps = 0;
    {
      Lock lock(node.mutex);
      if (!node.collector && !wait_or_finish(node, lock, [&] { return !node.inbox.empty(); }, "transitions from a collector")) {
        return nullptr;
      }
      fresh.swap(node.inbox);
      env_steps = node.transitions_received;
    }
    if (env_steps > node.s.max_env_steps) {
      throw std::runtime_error("not solved after " + std::to_string(env_steps) + " env steps");
    }
    for (const auto& t : fresh) {
      l->buffer.push(t);
    }
    if (l->buffer.size() >= static_cast<std::size_t>(node.s.batch)) {
      for (int u = 0; u < node.s.update_per_collect; ++u) {
        const auto batch = l->buffer.sample(static_cast<std::size_t>(node.s.batch), l->rng);
        l->adam.step(l->online.params(), rl::double_dqn_gradient(l->online, l->target, batch, node.s.gamma, &l->loss));
        ++ctx.train_iter;
        if (ctx.train_iter % node.s.target_update == 0) {
          l->target = l->online;
        }
        if (ctx.train_iter % 10 == 0) {
          ditask::metrics().scalar("loss", ctx.train_iter, static_cast<double>(l->loss));  // --metrics-dir
        }
        if (ctx.train_iter % 100 == 0) {
          char line[160];
          std::snprintf(line, sizeof line, "learner: train_iter %lld  loss %.4f  buffer %zu  env steps %lld",
                        static_cast<long long>(ctx.train_iter), static_cast<double>(l->loss), l->buffer.size(),
                        static_cast<long long>(env_steps));
          say(line);
        }
      }
    }
    if (ctx.train_iter - l->sent_model_at >= node.s.sync_every) {
      l->sent_model_at = ctx.train_iter;
      const rl::Weights w{static_cast<std::uint32_t>(ctx.train_iter), l->online.params()};
      if (node.collector || node.evaluator) {  // one process: the acting copy is here
        std::lock_guard lock(node.mutex);
        adopt_model(node, w, env_steps);
      }
      const auto bytes = rl::encode_weights(w);
      send_to_role(node, ditask::role::collector, "model", bytes, env_steps);
      send_to_role(node, ditask::role::evaluator, "model", bytes, env_steps);
    }
    send_to_role(node, ditask::role::collector, "iter", ctx.total_step);  // the learner's step: collectors go on
    return nullptr;
  };
}

// Evaluator: once a model at least eval_freq iterations newer than the last evaluated one is
// here, runs eval_episodes greedy episodes; at the stop value it ends the job (finish).
ditask::Middleware evaluator_step(Node& node) {
  const double random_reward = [&node] {
    rl::Rng rng(rl::Rng::derive(node.s.seed, 4));
    double total = 0;
    for (int e = 0; e < node.s.eval_episodes; ++e) {
      rl::CartPole env(rl::Rng::derive(node.s.seed, 5, static_cast<std::uint64_t>(e)));
      env.reset();
      while (!env.step(static_cast<int>(rng.below(2))).done()) {
        total += 1;
      }
      total += 1;
    }
    return total / node.s.eval_episodes;
  }();
  char line[96];
  std::snprintf(line, sizeof line, "evaluator: a random policy's reward is %.1f", random_reward);
  say(line);
  const auto started = Clock::now();
  return [&node, started](ditask::Context& ctx) -> ditask::Backward {
    std::optional<rl::Mlp> model;
    std::int64_t iter = 0;
    std::int64_t env_steps = 0;
    {
      Lock lock(node.mutex);
      const auto due = [&] { return node.model_iter >= 0 && node.model_iter >= ctx.last_eval_iter + node.s.eval_freq; };
      if (!node.learner && !wait_or_finish(node, lock, due, "model from the learner")) {
        return nullptr;
      }
      if (!due()) {
        return nullptr;  // one process: not yet
      }
      model = node.acting;
      iter = node.model_iter;
      env_steps = node.model_env_steps;
    }
    const double reward = rl::evaluate_greedy(*model, rl::Rng::derive(node.s.seed, 6, static_cast<std::uint64_t>(iter)),
                                              node.s.eval_episodes);
    ctx.last_eval_iter = iter;
    ctx.last_eval_value = reward;
    ditask::metrics().scalar("eval_reward", iter, reward);  // --metrics-dir: the evaluator's curve
    char text[200];
    std::snprintf(text, sizeof text, "evaluator: train_iter %lld  eval reward %.1f", static_cast<long long>(iter), reward);
    say(text);
    if (reward >= node.s.stop_value) {
      const double secs = std::chrono::duration<double>(Clock::now() - started).count();
      std::snprintf(text, sizeof text,
                    "evaluator: eval reward %.1f reached the stop value %.0f at train_iter %lld after %lld env steps "
                    "(%.1f s): finish",
                    reward, node.s.stop_value, static_cast<long long>(iter), static_cast<long long>(env_steps), secs);
      say(text);
      ditask::task().set_finish();
    }
    return nullptr;
  };
}

}  // namespace dqn
