// SPDX-License-Identifier: MIT
// CartPole-v1 against values worked out from Gym's equations (Euler, tau 0.02) for a fixed
// action sequence, its termination and truncation rules, and its seeded reset.
#include <cmath>

#include <catch2/catch.hpp>

#include "cartpole.hpp"

namespace {

// Actions 0, 1, 1, 0, 1, 1, ... (left on every third step).
int action_at(int t) { return t % 3 == 0 ? 0 : 1; }

void check_state(const rl::CartState& got, const rl::CartState& want) {
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) < 1e-9);
  }
}

}  // namespace

TEST_CASE("cartpole: a fixed action sequence gives the states of Gym's equations after 1, 10 and 50 steps",
          "[rl][cartpole]") {
  rl::CartPole env(1);
  env.reset_to({0.01, -0.02, 0.03, 0.04});
  // Step 1 by hand: force -10; temp = (-10 + 0.05 * 0.04^2 * sin 0.03) / 1.1; x = 0.01 + 0.02 * -0.02.
  rl::StepResult r = env.step(action_at(0));
  check_state(r.state, {0.009600000000000001, -0.21553901710278936, 0.030799999999999998, 0.3419952237760392});
  CHECK(r.reward == 1.0);
  CHECK_FALSE(r.done());
  int terminated_at = 0;
  for (int t = 1; t < 50; ++t) {
    r = env.step(action_at(t));
    if (r.terminated && terminated_at == 0) {
      terminated_at = t + 1;
    }
    if (t + 1 == 10) {
      check_state(r.state, {0.04069383704061957, 0.3660668063895223, -0.005257123148875872, -0.4532419330457});
    }
  }
  check_state(r.state, {1.3553701424521227, 2.530281239933074, -3.4102287415158083, -8.049265470226919});
  CHECK(terminated_at == 20);  // |theta| passed 12 degrees
}

TEST_CASE("cartpole: the track and the angle end an episode, 500 steps truncate it", "[rl][cartpole]") {
  rl::CartPole env(1);
  env.reset_to({2.39, 1.0, 0.0, 0.0});
  auto r = env.step(1);
  CHECK(r.terminated);  // x = 2.41 > 2.4
  env.reset_to({0.0, 0.0, 0.2094, 0.1});
  r = env.step(1);
  CHECK(r.terminated);  // theta past 12 degrees (0.20944 rad)
  // Balanced by hand: alternate pushes from the upright state never fall within 500 steps here.
  env.reset_to({0.0, 0.0, 0.0, 0.0});
  int steps = 0;
  for (; steps < 600; ++steps) {
    r = env.step(env.state()[2] + 0.5 * env.state()[3] > 0 ? 1 : 0);
    if (r.done()) {
      break;
    }
  }
  CHECK(r.truncated);
  CHECK_FALSE(r.terminated);
  CHECK(env.steps() == rl::CartPole::kMaxSteps);
}

TEST_CASE("cartpole: reset draws each variable uniformly from [-0.05, 0.05], the same for the same seed",
          "[rl][cartpole]") {
  rl::CartPole a(42);
  rl::CartPole b(42);
  rl::CartPole c(43);
  for (int i = 0; i < 100; ++i) {
    const auto sa = a.reset();
    CHECK(sa == b.reset());
    for (double v : sa) {
      CHECK(v >= -0.05);
      CHECK(v < 0.05);
    }
  }
  CHECK(a.reset() != c.reset());
}
