// SPDX-License-Identifier: MIT
#include "cartpole.hpp"

#include <cmath>

namespace rl {

CartState CartPole::reset() {
  for (auto& v : state_) {
    v = rng_.uniform(-0.05, 0.05);
  }
  steps_ = 0;
  return state_;
}

void CartPole::reset_to(const CartState& state) noexcept {
  state_ = state;
  steps_ = 0;
}

StepResult CartPole::step(int action) {
  auto& [x, x_dot, theta, theta_dot] = state_;
  const double force = action == 1 ? kForce : -kForce;
  const double costheta = std::cos(theta);
  const double sintheta = std::sin(theta);
  const double temp = (force + kPoleMassLength * theta_dot * theta_dot * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kHalfLength * (4.0 / 3.0 - kMassPole * costheta * costheta / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
  // Euler, in Gym's order: positions from the old velocities.
  x = x + kTau * x_dot;
  x_dot = x_dot + kTau * xacc;
  theta = theta + kTau * theta_dot;
  theta_dot = theta_dot + kTau * thetaacc;
  ++steps_;
  StepResult r;
  r.state = state_;
  r.reward = 1.0;
  r.terminated = x < -kXLimit || x > kXLimit || theta < -kThetaLimit || theta > kThetaLimit;
  r.truncated = !r.terminated && steps_ >= kMaxSteps;
  return r;
}

}  // namespace rl
