// SPDX-License-Identifier: MIT
// Adam (Kingma & Ba), as torch.optim.Adam with its defaults: beta1 0.9, beta2 0.999, eps 1e-8, no
// weight decay. Pure code. Thread: one owner.
#pragma once

#include <cmath>

#include <Eigen/Dense>

namespace rl {

class Adam {
 public:
  /// For `n` parameters.
  Adam(Eigen::Index n, float lr, float beta1 = 0.9F, float beta2 = 0.999F, float eps = 1e-8F)
      : lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps), m_(Eigen::VectorXf::Zero(n)), v_(Eigen::VectorXf::Zero(n)) {}

  /// One step that decreases the loss whose gradient is `grad`.
  void step(Eigen::VectorXf& params, const Eigen::VectorXf& grad) {
    ++t_;
    m_ = beta1_ * m_ + (1.0F - beta1_) * grad;
    v_ = beta2_ * v_ + (1.0F - beta2_) * grad.cwiseProduct(grad);
    const float c1 = 1.0F - std::pow(beta1_, static_cast<float>(t_));
    const float c2 = 1.0F - std::pow(beta2_, static_cast<float>(t_));
    params.array() -= lr_ * (m_.array() / c1) / ((v_.array() / c2).sqrt() + eps_);
  }
  /// Steps taken.
  long steps() const noexcept { return t_; }

 private:
  float lr_, beta1_, beta2_, eps_;
  Eigen::VectorXf m_, v_;
  long t_ = 0;
};

}  // namespace rl
