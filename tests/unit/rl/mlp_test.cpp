// SPDX-License-Identifier: MIT
// The MLP's gradient against central finite differences (with and without dropout), Adam's step
// against its formula, REINFORCE's returns, and the binary payloads.
#include <cmath>

#include <catch2/catch.hpp>

#include "adam.hpp"
#include "codec.hpp"
#include "mlp.hpp"
#include "reinforce.hpp"

namespace {

// A scalar loss of the outputs: sum(c .* out) for fixed weights c, so d(loss)/d(out) = c. Also
// gives the ReLU/dropout masks of that pass.
float loss_of(const rl::Mlp& net, const Eigen::MatrixXf& x, const Eigen::MatrixXf& c, std::uint64_t dropout_seed,
              rl::MlpCache& cache) {
  rl::Rng rng(dropout_seed);
  return (net.forward(x, &cache, dropout_seed != 0 ? &rng : nullptr).cwiseProduct(c)).sum();
}

void check_gradient(float dropout, std::uint64_t dropout_seed) {
  rl::Mlp net({4, 16, 8, 2}, 7, dropout);
  rl::Rng data(3);
  Eigen::MatrixXf x(4, 5);
  Eigen::MatrixXf c(2, 5);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    x.data()[i] = static_cast<float>(data.uniform(-1, 1));
  }
  for (Eigen::Index i = 0; i < c.size(); ++i) {
    c.data()[i] = static_cast<float>(data.uniform(-1, 1));
  }
  rl::MlpCache cache;
  rl::Rng rng(dropout_seed);
  net.forward(x, &cache, dropout_seed != 0 ? &rng : nullptr);
  const Eigen::VectorXf grad = net.backward(cache, c);
  REQUIRE(grad.size() == net.size());
  // The loss is piecewise linear in each weight: a central difference is exact (up to float32
  // rounding) unless the step moves a pre-activation across a ReLU kink, which the masks show.
  const float h = 1e-2F;
  int checked = 0;
  for (Eigen::Index i = 0; i < net.size(); ++i) {
    const float keep = net.params()[i];
    rl::MlpCache at_up;
    rl::MlpCache at_down;
    net.params()[i] = keep + h;
    const float up = loss_of(net, x, c, dropout_seed, at_up);
    net.params()[i] = keep - h;
    const float down = loss_of(net, x, c, dropout_seed, at_down);
    net.params()[i] = keep;
    if (at_up.masks != cache.masks || at_down.masks != cache.masks) {
      continue;  // across a kink: the difference quotient is not the derivative here
    }
    const float numeric = (up - down) / (2 * h);
    CAPTURE(i, numeric, grad[i]);
    CHECK(std::abs(numeric - grad[i]) < 1e-3F + 1e-2F * std::abs(grad[i]));
    ++checked;
  }
  CHECK(checked > net.size() * 9 / 10);  // nearly every parameter is away from a kink
}

}  // namespace

TEST_CASE("mlp: the gradient matches central finite differences", "[rl][mlp]") { check_gradient(0.0F, 0); }

TEST_CASE("mlp: with dropout, the gradient matches finite differences under the same mask", "[rl][mlp]") {
  check_gradient(0.6F, 11);
}

TEST_CASE("mlp: softmax columns sum to one and keep their order", "[rl][mlp]") {
  Eigen::MatrixXf logits(2, 2);
  logits << 1.0F, 100.0F, 2.0F, 100.0F;
  const auto p = rl::softmax(logits);
  CHECK(std::abs(p.col(0).sum() - 1.0F) < 1e-6F);
  CHECK(p(1, 0) > p(0, 0));
  CHECK(std::abs(p(0, 1) - 0.5F) < 1e-6F);
}

TEST_CASE("adam: one step is lr * m_hat / (sqrt(v_hat) + eps), moving against the gradient", "[rl][adam]") {
  Eigen::VectorXf params(2);
  params << 1.0F, -1.0F;
  Eigen::VectorXf grad(2);
  grad << 0.5F, -2.0F;
  rl::Adam adam(2, 0.01F);
  adam.step(params, grad);
  // First step: m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps) = lr * sign(g).
  CHECK(std::abs(params[0] - (1.0F - 0.01F)) < 1e-6F);
  CHECK(std::abs(params[1] - (-1.0F + 0.01F)) < 1e-6F);
  CHECK(adam.steps() == 1);
}

TEST_CASE("reinforce: returns are discounted, then normalised to mean 0 and unit std", "[rl][reinforce]") {
  const auto g = rl::normalised_returns({1, 1, 1}, 0.5F);
  // Raw returns 1.75, 1.5, 1: mean 1.41667, unbiased std 0.38188.
  REQUIRE(g.size() == 3);
  CHECK(std::abs(g[0] - 0.87287F) < 1e-4F);
  CHECK(std::abs(g[1] - 0.21822F) < 1e-4F);
  CHECK(std::abs(g[2] + 1.09109F) < 1e-4F);
}

TEST_CASE("codec: weights, trajectories and transitions round trip, and malformed input is refused", "[rl][codec]") {
  rl::Weights w;
  w.version = 7;
  w.params = Eigen::VectorXf::LinSpaced(5, -1.0F, 1.0F);
  const auto wb = rl::encode_weights(w);
  CHECK(wb.size() == 12 + 5 * 4);
  CHECK(wb[0] == 'R');
  const auto w2 = rl::decode_weights(wb);
  CHECK(w2.version == 7);
  CHECK(w2.params == w.params);
  auto truncated = wb;
  truncated.pop_back();
  CHECK_THROWS_WITH(rl::decode_weights(truncated), Catch::Contains("malformed weights"));
  auto huge = wb;
  huge[8] = 0xff;
  huge[9] = 0xff;
  CHECK_THROWS_WITH(rl::decode_weights(huge), Catch::Contains("does not fit"));

  rl::Trajectory t;
  t.version = 3;
  t.states = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  t.actions = {0, 1};
  t.rewards = {1, 1};
  const auto t2 = rl::decode_trajectory(rl::encode_trajectory(t));
  CHECK(t2.version == 3);
  CHECK(t2.states == t.states);
  CHECK(t2.actions == t.actions);
  CHECK(t2.rewards == t.rewards);
  CHECK_THROWS_WITH(rl::decode_trajectory(wb), Catch::Contains("bad magic"));

  std::vector<rl::Transition> ts(2);
  ts[1].action = 1;
  ts[1].reward = 0.5F;
  ts[1].done = true;
  ts[1].next = {9, 9, 9, 9};
  std::uint32_t version = 0;
  const auto ts2 = rl::decode_transitions(rl::encode_transitions(4, ts), &version);
  CHECK(version == 4);
  REQUIRE(ts2.size() == 2);
  CHECK(ts2[1].done);
  CHECK(ts2[1].next == ts[1].next);
  CHECK(ts2[1].reward == 0.5F);
}
