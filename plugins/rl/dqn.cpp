// SPDX-License-Identifier: MIT
#include "dqn.hpp"

#include <algorithm>
#include <cmath>

#include "reinforce.hpp"

namespace rl {

double EpsilonSchedule::at(std::int64_t env_step) const {
  return end + (start - end) * std::exp(-static_cast<double>(env_step) / decay);
}

void ReplayBuffer::push(const Transition& t) {
  if (items_.size() < capacity_) {
    items_.push_back(t);
  } else {
    items_[next_] = t;
  }
  next_ = (next_ + 1) % capacity_;
}

std::vector<Transition> ReplayBuffer::sample(std::size_t n, Rng& rng) const {
  std::vector<Transition> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(items_[rng.below(items_.size())]);
  }
  return out;
}

int greedy_action(const Mlp& q, const CartState& s) {
  const Eigen::VectorXf values = q.forward(to_input(s));
  return values[1] > values[0] ? 1 : 0;
}

int epsilon_greedy(const Mlp& q, const CartState& s, double eps, Rng& rng) {
  if (rng.uniform() < eps) {
    return static_cast<int>(rng.below(2));
  }
  return greedy_action(q, s);
}

Eigen::VectorXf double_dqn_gradient(const Mlp& online, const Mlp& target, const std::vector<Transition>& batch,
                                    float gamma, float* loss) {
  const auto n = static_cast<Eigen::Index>(batch.size());
  Eigen::MatrixXf s(4, n);
  Eigen::MatrixXf next(4, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& t = batch[static_cast<std::size_t>(i)];
    for (Eigen::Index k = 0; k < 4; ++k) {
      s(k, i) = t.state[static_cast<std::size_t>(k)];
      next(k, i) = t.next[static_cast<std::size_t>(k)];
    }
  }
  MlpCache cache;
  const Eigen::MatrixXf q = online.forward(s, &cache);
  const Eigen::MatrixXf q_next_online = online.forward(next);
  const Eigen::MatrixXf q_next_target = target.forward(next);
  Eigen::MatrixXf dout = Eigen::MatrixXf::Zero(q.rows(), n);
  double total = 0.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& t = batch[static_cast<std::size_t>(i)];
    const Eigen::Index best = q_next_online(1, i) > q_next_online(0, i) ? 1 : 0;
    const float y = t.reward + (t.done ? 0.0F : gamma * q_next_target(best, i));
    const float td = q(t.action, i) - y;
    // Huber (delta 1): 0.5 td^2 inside, |td| - 0.5 outside; its derivative is td clamped to [-1, 1].
    total += std::abs(td) <= 1.0F ? 0.5 * td * td : std::abs(td) - 0.5;
    dout(t.action, i) = std::clamp(td, -1.0F, 1.0F) / static_cast<float>(n);
  }
  if (loss != nullptr) {
    *loss = static_cast<float>(total / static_cast<double>(n));
  }
  return online.backward(cache, dout);
}

double evaluate_greedy(const Mlp& q, std::uint64_t seed, int episodes) {
  double total = 0.0;
  for (int e = 0; e < episodes; ++e) {
    CartPole env(Rng::derive(seed, static_cast<std::uint64_t>(e)));
    CartState s = env.reset();
    while (true) {
      const StepResult r = env.step(greedy_action(q, s));
      total += r.reward;
      if (r.done()) {
        break;
      }
      s = r.state;
    }
  }
  return total / episodes;
}

}  // namespace rl
