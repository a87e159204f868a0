// SPDX-License-Identifier: MIT
// A small multi-layer perceptron on Eigen: linear layers with ReLU between them and a linear
// output, an optional dropout after the first layer (as the PyTorch RPC tutorial's policy has it:
// Linear -> Dropout -> ReLU -> Linear), its gradient, and every parameter in one flat float vector
// (what Adam steps and what travels between workers). Pure code. Thread: one owner.
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "rng.hpp"

namespace rl {

/// What one forward pass keeps for its backward pass.
struct MlpCache {
  std::vector<Eigen::MatrixXf> inputs;  ///< the input of each layer (columns are samples)
  std::vector<Eigen::MatrixXf> masks;   ///< per hidden layer: 1 where the ReLU passed (dropout scale folded in)
};

class Mlp {
 public:
  /// Layer sizes {in, hidden..., out} (at least two). Weights and biases start uniform in
  /// +-1/sqrt(fan_in), like PyTorch's nn.Linear. `dropout` in [0, 1) after the first layer.
  Mlp(std::vector<int> sizes, std::uint64_t seed, float dropout = 0.0F);

  /// Outputs (out x B) for inputs `x` (in x B). With `cache`, keeps what backward() needs;
  /// dropout applies only when `rng` is given (training), with PyTorch's 1/(1-p) scaling.
  Eigen::MatrixXf forward(const Eigen::MatrixXf& x, MlpCache* cache = nullptr, Rng* rng = nullptr) const;
  /// The gradient of sum(dout .* output) with respect to params(), for the forward pass that
  /// filled `cache`.
  Eigen::VectorXf backward(const MlpCache& cache, const Eigen::MatrixXf& dout) const;

  /// Every weight and bias: layer by layer, the weight matrix (column-major), then the bias.
  Eigen::VectorXf& params() noexcept { return params_; }
  const Eigen::VectorXf& params() const noexcept { return params_; }
  /// Layer sizes as given.
  const std::vector<int>& sizes() const noexcept { return sizes_; }
  /// Number of parameters.
  Eigen::Index size() const noexcept { return params_.size(); }

 private:
  Eigen::Map<const Eigen::MatrixXf> weight(std::size_t layer) const;
  Eigen::Map<const Eigen::VectorXf> bias(std::size_t layer) const;

  std::vector<int> sizes_;
  std::vector<Eigen::Index> offsets_;  // where layer l's weight starts; its bias follows
  float dropout_;
  Eigen::VectorXf params_;
};

/// Softmax of each column.
Eigen::MatrixXf softmax(const Eigen::MatrixXf& logits);

}  // namespace rl
