// SPDX-License-Identifier: MIT
// Deep Q-learning on CartPole (DI-engine's cartpole DQN setting): a replay buffer, the
// exponential epsilon schedule, greedy and epsilon-greedy actions, and the Double DQN update with
// a target network and the Huber loss. Pure code. Thread: one owner per object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "cartpole.hpp"
#include "codec.hpp"
#include "mlp.hpp"
#include "rng.hpp"

namespace rl {

/// The Q-network: 4 -> 128 -> 128 -> 2, a value per action.
inline std::vector<int> q_sizes() { return {4, 128, 128, 2}; }

/// DI-engine's "exp" epsilon: end + (start - end) * exp(-env_step / decay).
struct EpsilonSchedule {
  double start = 0.95;
  double end = 0.1;
  double decay = 10000;
  double at(std::int64_t env_step) const;
};

/// A ring of the last `capacity` transitions.
class ReplayBuffer {
 public:
  explicit ReplayBuffer(std::size_t capacity) : capacity_(capacity) {}
  void push(const Transition& t);
  std::size_t size() const noexcept { return items_.size(); }
  /// `n` transitions drawn uniformly with replacement. Precondition: size() > 0.
  std::vector<Transition> sample(std::size_t n, Rng& rng) const;

 private:
  std::size_t capacity_;
  std::size_t next_ = 0;
  std::vector<Transition> items_;
};

/// The action with the highest Q value.
int greedy_action(const Mlp& q, const CartState& s);
/// A random action with probability `eps`, else the greedy one.
int epsilon_greedy(const Mlp& q, const CartState& s, double eps, Rng& rng);

/// The Double DQN gradient of the mean Huber loss over `batch`: targets r + gamma * (1 - done) *
/// target(s')[argmax online(s')]. `loss` (when given) receives that mean loss.
Eigen::VectorXf double_dqn_gradient(const Mlp& online, const Mlp& target, const std::vector<Transition>& batch,
                                    float gamma, float* loss = nullptr);

/// The mean reward of `episodes` greedy episodes (seeded from `seed`).
double evaluate_greedy(const Mlp& q, std::uint64_t seed, int episodes);

}  // namespace rl
