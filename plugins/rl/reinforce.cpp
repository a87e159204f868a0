// SPDX-License-Identifier: MIT
#include "reinforce.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

namespace rl {

Eigen::VectorXf to_input(const CartState& s) {
  Eigen::VectorXf x(4);
  for (int i = 0; i < 4; ++i) {
    x[i] = static_cast<float>(s[static_cast<std::size_t>(i)]);
  }
  return x;
}

int sample_action(const Eigen::VectorXf& logits, Rng& rng) {
  const Eigen::MatrixXf p = softmax(logits);
  return rng.uniform() < static_cast<double>(p(0, 0)) ? 0 : 1;
}

Trajectory run_episode(const Mlp& policy, CartPole& env, Rng& rng, std::uint32_t version, std::uint64_t mask_seed) {
  Trajectory t;
  t.version = version;
  t.mask_seed = mask_seed;
  Rng masks(mask_seed);
  CartState s = env.reset();
  while (true) {
    const Eigen::VectorXf x = to_input(s);
    const int action = sample_action(policy.forward(x, nullptr, &masks), rng);
    t.states.push_back({x[0], x[1], x[2], x[3]});
    t.actions.push_back(static_cast<std::uint8_t>(action));
    const StepResult r = env.step(action);
    t.rewards.push_back(static_cast<float>(r.reward));
    if (r.done()) {
      return t;
    }
    s = r.state;
  }
}

std::vector<float> normalised_returns(const std::vector<float>& rewards, float gamma) {
  std::vector<float> g(rewards.size());
  float running = 0.0F;
  for (std::size_t i = rewards.size(); i-- > 0;) {
    running = rewards[i] + gamma * running;
    g[i] = running;
  }
  if (g.empty()) {
    return g;
  }
  double mean = 0.0;
  for (float v : g) {
    mean += v;
  }
  mean /= static_cast<double>(g.size());
  double var = 0.0;
  for (float v : g) {
    var += (v - mean) * (v - mean);
  }
  const double sd = g.size() > 1 ? std::sqrt(var / static_cast<double>(g.size() - 1)) : 0.0;
  const double eps = std::numeric_limits<float>::epsilon();
  for (auto& v : g) {
    v = static_cast<float>((v - mean) / (sd + eps));
  }
  return g;
}

Eigen::VectorXf reinforce_gradient(const Mlp& policy, const Trajectory& episode, float gamma) {
  const auto n = static_cast<Eigen::Index>(episode.actions.size());
  Eigen::MatrixXf x(4, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index k = 0; k < 4; ++k) {
      x(k, i) = episode.states[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)];
    }
  }
  // One batch draws the masks in the order the episode drew them, step after step.
  MlpCache cache;
  Rng masks(episode.mask_seed);
  const Eigen::MatrixXf p = softmax(policy.forward(x, &cache, &masks));
  const auto g = normalised_returns(episode.rewards, gamma);
  // d(-log p_a * G)/d(logits) = (p - onehot(a)) * G
  Eigen::MatrixXf dout = p;
  for (Eigen::Index i = 0; i < n; ++i) {
    dout(episode.actions[static_cast<std::size_t>(i)], i) -= 1.0F;
    dout.col(i) *= g[static_cast<std::size_t>(i)];
  }
  return policy.backward(cache, dout);
}

std::string episode_line(long episode, double last_reward, double running) {
  char text[128];
  std::snprintf(text, sizeof text, "Episode %ld  Last reward %.2f  Average reward %.2f", episode, last_reward, running);
  return text;
}

std::string solved_line(double running, long last_steps) {
  char text[160];
  std::snprintf(text, sizeof text, "Solved! Running reward is now %.2f and the last episode runs to %ld time steps!",
                running, last_steps);
  return text;
}

}  // namespace rl
