// SPDX-License-Identifier: MIT
// The owner's side of a DistributedOptimizer: a remote object on each worker that owns some of
// its parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/optim/optimizer.h>

#include "ditask/torch/tensor_wire.hpp"
#include "ditask/rpc.hpp"

namespace ditask::detail {

/// One LibTorch optimizer over this worker's share of a DistributedOptimizer's parameters
/// (remote class "DistributedOptimizer.Owner"). Thread: any (one step at a time).
class OptimizerOwner {
 public:
  /// Makes the optimizer with the factory named `factory` (define_optimizer). Errors:
  /// ditask::Error for an unknown factory or a parameter this worker does not own.
  OptimizerOwner(const std::string& factory, const std::vector<RRef<at::Tensor>>& parameters);
  /// One step with context `context_id`'s gradients here. Errors: ditask::Error for an unknown
  /// context; what the optimizer throws.
  void step(std::int64_t context_id);

 private:
  std::mutex mutex_;
  std::vector<at::Tensor> parameters_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace ditask::detail
