// SPDX-License-Identifier: MIT
// The PyTorch RPC tutorial's agent/observer REINFORCE, over ditask's remote calls:
//   ditask --package rpc_cartpole --main main --parallel-workers 3
// Node 0 is the agent: it holds the policy (the RL library's MLP 4-128-2 with dropout 0.6, Adam
// lr 1e-2, gamma 0.99), creates an Observer on every other node with remote(), and wraps itself in
// a handle (local_ref, the tutorial's RRef(self)). Each episode it calls run_episode(agent) on
// every observer at once (call_async) and waits for all; an observer runs CartPole-v1 and, every
// step, calls the agent's select_action(observer, state) and report_reward(observer, reward)
// through the handle. The agent then sums the REINFORCE gradients of the observers' episodes
// (returns normalised per observer), steps Adam, keeps running = 0.05 * min reward + 0.95 *
// running, prints a line every 10 episodes, and stops when running passes the threshold.
// Module arguments (after --): seed (0), threshold (475), max_episodes (3000), gamma (0.99), lr (0.01).
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ditask/ditask.hpp>

#include "adam.hpp"
#include "reinforce.hpp"

namespace {

struct Settings {
  std::uint64_t seed = 0;
  double threshold = rl::CartPole::kSolvedReward;
  long max_episodes = 3000;
  float gamma = 0.99F;
  float lr = 0.01F;
};

Settings settings() {
  const ditask::ModuleArgs p({"seed", "threshold", "max_episodes", "gamma", "lr"});
  Settings s;
  s.seed = static_cast<std::uint64_t>(p.integer("seed", 0));
  s.threshold = p.number("threshold", s.threshold);
  s.max_episodes = static_cast<long>(p.integer("max_episodes", s.max_episodes));
  s.gamma = static_cast<float>(p.number("gamma", s.gamma));
  s.lr = static_cast<float>(p.number("lr", s.lr));
  return s;
}

void say(const std::string& line) { std::cout << (line + "\n") << std::flush; }

/// The agent: the policy, and what each observer's current episode did.
/// Thread: select_action/report_reward of different observers run at once (one thread per
/// caller); each touches only its observer's slot, and the policy is read-only until train().
class Agent {
 public:
  Agent(const Settings& s, const std::vector<std::int64_t>& observers)
      : s_(s), policy_(rl::policy_sizes(), rl::Rng::derive(s.seed, 0xA6E27), rl::kPolicyDropout),
        adam_(policy_.size(), s.lr) {
    for (auto id : observers) {
      slots_.emplace(id, Slot{});
    }
  }

  /// Gets every observer's slot ready for episode `episode`.
  void begin_episode(long episode) {
    for (auto& [id, slot] : slots_) {
      slot.episode = rl::Trajectory{};
      slot.episode.mask_seed = rl::Rng::derive(s_.seed, static_cast<std::uint64_t>(id), static_cast<std::uint64_t>(episode), 2);
      slot.masks = rl::Rng(slot.episode.mask_seed);
      slot.actions = rl::Rng(rl::Rng::derive(s_.seed, static_cast<std::uint64_t>(id), static_cast<std::uint64_t>(episode), 1));
    }
  }
  /// The tutorial's select_action: samples from the policy (dropout on) and records the step.
  std::int64_t select_action(std::int64_t observer, double x, double x_dot, double theta, double theta_dot) {
    Slot& slot = slot_of(observer);
    const Eigen::VectorXf input = rl::to_input(rl::CartState{x, x_dot, theta, theta_dot});
    const int action = rl::sample_action(policy_.forward(input, nullptr, &slot.masks), slot.actions);
    slot.episode.states.push_back({input[0], input[1], input[2], input[3]});
    slot.episode.actions.push_back(static_cast<std::uint8_t>(action));
    return action;
  }
  /// The tutorial's report_reward.
  void report_reward(std::int64_t observer, double reward) {
    slot_of(observer).episode.rewards.push_back(static_cast<float>(reward));
  }
  /// finish_episode: one Adam step on the summed REINFORCE loss; returns the smallest episode reward.
  double train() {
    Eigen::VectorXf grad = Eigen::VectorXf::Zero(policy_.size());
    double min_reward = -1;
    for (auto& [id, slot] : slots_) {
      if (slot.episode.rewards.size() != slot.episode.actions.size() || slot.episode.actions.empty()) {
        throw std::runtime_error("observer " + std::to_string(id) + " reported " +
                                 std::to_string(slot.episode.rewards.size()) + " rewards for " +
                                 std::to_string(slot.episode.actions.size()) + " actions");
      }
      grad += rl::reinforce_gradient(policy_, slot.episode, s_.gamma);
      double total = 0;
      for (float r : slot.episode.rewards) {
        total += r;
      }
      min_reward = min_reward < 0 ? total : std::min(min_reward, total);
    }
    adam_.step(policy_.params(), grad);
    return min_reward;
  }

 private:
  struct Slot {
    rl::Trajectory episode;
    rl::Rng masks{0};
    rl::Rng actions{0};
  };
  Slot& slot_of(std::int64_t observer) {
    auto it = slots_.find(observer);
    if (it == slots_.end()) {
      throw std::invalid_argument("no observer " + std::to_string(observer));
    }
    return it->second;
  }

  Settings s_;
  rl::Mlp policy_;
  rl::Adam adam_;
  std::map<std::int64_t, Slot> slots_;  // keys fixed at construction
};

/// An observer: one CartPole-v1 environment, driven by the agent's actions.
class Observer {
 public:
  Observer(std::int64_t id, std::uint64_t seed) : id_(id), env_(rl::Rng::derive(seed, static_cast<std::uint64_t>(id), 0xE27)) {}
  /// Runs one episode (up to 10,000 steps, as the tutorial; CartPole-v1 truncates at 500),
  /// asking the agent for every action. Returns the episode's reward.
  double run_episode(const ditask::RRef<Agent>& agent) {
    rl::CartState state = env_.reset();
    double total = 0;
    for (int step = 0; step < 10'000; ++step) {
      const auto action =
          agent.call<std::int64_t>("select_action", id_, state[0], state[1], state[2], state[3]);
      const rl::StepResult r = env_.step(static_cast<int>(action));
      agent.call("report_reward", id_, r.reward);
      total += r.reward;
      if (r.done()) {
        break;
      }
      state = r.state;
    }
    return total;
  }

 private:
  std::int64_t id_;
  rl::CartPole env_;
};

void define_classes() {
  auto& rpc = ditask::rpc();
  rpc.define_class<Agent>("Agent").method("select_action", &Agent::select_action).method("report_reward", &Agent::report_reward);
  rpc.define_class<Observer>("Observer").constructor<std::int64_t, std::uint64_t>().method("run_episode",
                                                                                         &Observer::run_episode);
}

void run_agent(const Settings& s) {
  auto& rpc = ditask::rpc();
  std::vector<std::int64_t> ids;
  for (const auto& peer : ditask::task().router().peers()) {
    ids.push_back(peer.node_id);
  }
  if (ids.empty()) {
    throw std::invalid_argument("rpc_cartpole needs at least one observer: run it with --parallel-workers 2 or more");
  }
  std::vector<ditask::RRef<Observer>> observers;
  for (auto id : ids) {
    observers.push_back(rpc.remote<Observer>(id, id, s.seed));
  }
  auto agent = std::make_shared<Agent>(s, ids);
  const auto agent_ref = rpc.local_ref(agent);  // the tutorial's RRef(self)
  say("agent on node " + std::to_string(ditask::task().router().node_id()) + ", " + std::to_string(ids.size()) +
      " observer(s)");
  const auto started = std::chrono::steady_clock::now();
  rl::RunningReward running;
  for (long episode = 1; episode <= s.max_episodes; ++episode) {
    agent->begin_episode(episode);
    std::vector<ditask::Future<double>> rewards;
    for (const auto& ob : observers) {
      rewards.push_back(ob.call_async<double>("run_episode", agent_ref));
    }
    ditask::wait_all(rewards);
    const double min_reward = agent->train();
    const double average = running.add(min_reward);
    ditask::metrics().scalar("reward", episode, min_reward);  // --metrics-dir: the learning curve
    ditask::metrics().scalar("running_reward", episode, average);
    if (episode % 10 == 0) {
      say(rl::episode_line(episode, min_reward, average));
    }
    if (average > s.threshold) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const auto served = rpc.stats().served;
      say("Solved! Running reward is now " + std::to_string(average) + "!");
      say("SUMMARY episodes=" + std::to_string(episode) + " observers=" + std::to_string(ids.size()) +
          " seconds=" + std::to_string(seconds) + " rpcs=" + std::to_string(served) +
          " rpcs_per_second=" + std::to_string(static_cast<long>(static_cast<double>(served) / seconds)));
      return;
    }
  }
  throw std::runtime_error("not solved after " + std::to_string(s.max_episodes) + " episodes (running reward " +
                           std::to_string(running.value()) + ")");
}

}  // namespace

DITASK_MAIN(main) {
  const Settings s = settings();
  define_classes();
  auto& task = ditask::task();
  auto running = task.start();
  if (task.router().node_id() == 0) {
    run_agent(s);
    return;
  }
  // Observers serve until the agent's task stops (its finish), however long training takes. The
  // waiter comes before ready(), which drops the early events nobody waits for.
  auto finish = task.waiter(ditask::events::finish);
  task.ready();
  if (!finish.wait()) {
    throw std::runtime_error("the task stopped before the agent finished");
  }
}
