// SPDX-License-Identifier: MIT
// REINFORCE on CartPole with a softmax policy (the PyTorch RPC tutorial's agent): running an
// episode, normalised discounted returns, the policy-gradient of one episode, and the running
// reward the tutorial logs. Pure code. Thread: one owner per object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "cartpole.hpp"
#include "codec.hpp"
#include "mlp.hpp"
#include "rng.hpp"

namespace rl {

/// The tutorial's policy: 4 -> 128 -> dropout 0.6 -> ReLU -> 2, softmax over the two actions.
inline std::vector<int> policy_sizes() { return {4, 128, 2}; }
/// Its dropout (PyTorch's nn.Dropout(p=0.6), active while acting, as the tutorial's agent never
/// switches to eval mode). Without it, REINFORCE here collapses on some seeds.
inline constexpr float kPolicyDropout = 0.6F;

/// The state as the network's input column.
Eigen::VectorXf to_input(const CartState& s);

/// An action drawn from the softmax of `logits` (a column of 2).
int sample_action(const Eigen::VectorXf& logits, Rng& rng);

/// Runs one episode of `env` with `policy`, sampling actions with `rng` and drawing the
/// policy's dropout masks from Rng(mask_seed), step by step; tagged `version`.
Trajectory run_episode(const Mlp& policy, CartPole& env, Rng& rng, std::uint32_t version, std::uint64_t mask_seed);

/// G_t = r_t + gamma G_{t+1}, then (G - mean) / (std + eps) with the unbiased std, as the
/// tutorial does (one step: only the mean is removed).
std::vector<float> normalised_returns(const std::vector<float>& rewards, float gamma);

/// The gradient of sum_t -log pi(a_t | s_t) * G_t (normalised returns) for one episode, with the
/// dropout masks the episode was run with (redrawn from its mask seed).
Eigen::VectorXf reinforce_gradient(const Mlp& policy, const Trajectory& episode, float gamma);

/// running = 0.05 * episode reward + 0.95 * running, from 0 (the tutorial's).
class RunningReward {
 public:
  double add(double episode_reward) {
    value_ = 0.05 * episode_reward + 0.95 * value_;
    return value_;
  }
  double value() const noexcept { return value_; }

 private:
  double value_ = 0.0;
};

/// "Episode N  Last reward R  Average reward A" (the log line every 10 episodes).
std::string episode_line(long episode, double last_reward, double running);
/// "Solved! Running reward is now R and the last episode runs to T time steps!"
std::string solved_line(double running, long last_steps);

}  // namespace rl
