// SPDX-License-Identifier: MIT
#include "mlp.hpp"

#include <cmath>
#include <stdexcept>

namespace rl {

Mlp::Mlp(std::vector<int> sizes, std::uint64_t seed, float dropout) : sizes_(std::move(sizes)), dropout_(dropout) {
  if (sizes_.size() < 2 || dropout_ < 0.0F || dropout_ >= 1.0F) {
    throw std::invalid_argument("Mlp needs at least two layer sizes and a dropout in [0, 1)");
  }
  Eigen::Index total = 0;
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
    offsets_.push_back(total);
    total += Eigen::Index{sizes_[l + 1]} * sizes_[l] + sizes_[l + 1];
  }
  params_.resize(total);
  Rng rng(seed);
  for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(sizes_[l]));
    const Eigen::Index n = Eigen::Index{sizes_[l + 1]} * sizes_[l] + sizes_[l + 1];
    for (Eigen::Index i = 0; i < n; ++i) {
      params_[offsets_[l] + i] = static_cast<float>(rng.uniform(-bound, bound));
    }
  }
}

Eigen::Map<const Eigen::MatrixXf> Mlp::weight(std::size_t layer) const {
  return {params_.data() + offsets_[layer], sizes_[layer + 1], sizes_[layer]};
}

Eigen::Map<const Eigen::VectorXf> Mlp::bias(std::size_t layer) const {
  return {params_.data() + offsets_[layer] + Eigen::Index{sizes_[layer + 1]} * sizes_[layer], sizes_[layer + 1]};
}

Eigen::MatrixXf Mlp::forward(const Eigen::MatrixXf& x, MlpCache* cache, Rng* rng) const {
  if (cache != nullptr) {
    cache->inputs.clear();
    cache->masks.clear();
  }
  Eigen::MatrixXf a = x;
  const std::size_t layers = sizes_.size() - 1;
  for (std::size_t l = 0; l < layers; ++l) {
    if (cache != nullptr) {
      cache->inputs.push_back(a);
    }
    Eigen::MatrixXf z = (weight(l) * a).colwise() + bias(l);
    if (l + 1 == layers) {
      return z;
    }
    // The hidden layer's mask: ReLU, and for the first layer the dropout (kept units scaled).
    Eigen::MatrixXf mask = (z.array() > 0.0F).cast<float>().matrix();
    if (l == 0 && rng != nullptr && dropout_ > 0.0F) {
      const float keep = 1.0F / (1.0F - dropout_);
      for (Eigen::Index i = 0; i < mask.size(); ++i) {
        mask.data()[i] *= rng->uniform() < dropout_ ? 0.0F : keep;
      }
    }
    a = z.cwiseProduct(mask);
    if (cache != nullptr) {
      cache->masks.push_back(std::move(mask));
    }
  }
  return a;
}

Eigen::VectorXf Mlp::backward(const MlpCache& cache, const Eigen::MatrixXf& dout) const {
  Eigen::VectorXf grad = Eigen::VectorXf::Zero(params_.size());
  Eigen::MatrixXf delta = dout;  // d(loss)/d(z) of the current layer
  for (std::size_t l = sizes_.size() - 1; l-- > 0;) {
    const Eigen::Index out = sizes_[l + 1];
    const Eigen::Index in = sizes_[l];
    Eigen::Map<Eigen::MatrixXf> dw(grad.data() + offsets_[l], out, in);
    Eigen::Map<Eigen::VectorXf> db(grad.data() + offsets_[l] + out * in, out);
    dw.noalias() = delta * cache.inputs[l].transpose();
    db = delta.rowwise().sum();
    if (l > 0) {
      delta = (weight(l).transpose() * delta).cwiseProduct(cache.masks[l - 1]);
    }
  }
  return grad;
}

Eigen::MatrixXf softmax(const Eigen::MatrixXf& logits) {
  Eigen::MatrixXf out(logits.rows(), logits.cols());
  for (Eigen::Index c = 0; c < logits.cols(); ++c) {
    const float top = logits.col(c).maxCoeff();
    out.col(c) = (logits.col(c).array() - top).exp().matrix();
    out.col(c) /= out.col(c).sum();
  }
  return out;
}

}  // namespace rl
