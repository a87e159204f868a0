// SPDX-License-Identifier: MIT
// CartPole-v1 exactly as Gym's classic control has it (gym/envs/classic_control/cartpole.py):
// Euler integration with tau 0.02, gravity 9.8, cart mass 1.0, pole mass 0.1, pole half length 0.5,
// force 10; an episode terminates when |x| > 2.4 or |theta| > 12 degrees and is truncated after
// 500 steps; reward 1 per step (the terminating step included); reset draws each state variable
// uniformly from [-0.05, 0.05]. Pure code.
#pragma once

#include <array>
#include <cstdint>

#include "rng.hpp"

namespace rl {

/// x, x_dot, theta, theta_dot.
using CartState = std::array<double, 4>;

/// What one step returns.
struct StepResult {
  CartState state;
  double reward = 0;
  bool terminated = false;  ///< the pole fell or the cart left the track
  bool truncated = false;   ///< the 500-step limit
  bool done() const noexcept { return terminated || truncated; }
};

/// Thread: one owner.
class CartPole {
 public:
  static constexpr double kGravity = 9.8;
  static constexpr double kMassCart = 1.0;
  static constexpr double kMassPole = 0.1;
  static constexpr double kTotalMass = kMassCart + kMassPole;
  static constexpr double kHalfLength = 0.5;
  static constexpr double kPoleMassLength = kMassPole * kHalfLength;
  static constexpr double kForce = 10.0;
  static constexpr double kTau = 0.02;
  static constexpr double kThetaLimit = 12.0 * 2.0 * 3.14159265358979323846 / 360.0;
  static constexpr double kXLimit = 2.4;
  static constexpr int kMaxSteps = 500;
  /// The reward threshold of CartPole-v1 (gym's reward_threshold).
  static constexpr double kSolvedReward = 475.0;

  explicit CartPole(std::uint64_t seed) : rng_(seed) {}

  /// A new episode: each variable uniform in [-0.05, 0.05].
  CartState reset();
  /// Starts an episode at `state` (tests).
  void reset_to(const CartState& state) noexcept;
  /// Pushes left (action 0) or right (action 1) for one step of kTau seconds.
  StepResult step(int action);
  /// The current state.
  const CartState& state() const noexcept { return state_; }
  /// Steps taken in this episode.
  int steps() const noexcept { return steps_; }

 private:
  Rng rng_;
  CartState state_{};
  int steps_ = 0;
};

}  // namespace rl
