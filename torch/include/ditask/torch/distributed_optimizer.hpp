// SPDX-License-Identifier: MIT
#pragma once

/// The distributed optimizer (torch.distributed.optim.DistributedOptimizer) and handles to
/// parameters (torch's _parameter_rrefs). docs/autograd.md.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "ditask/torch/tensor_wire.hpp"  // before rpc.hpp: tensors convert wherever it converts
#include "ditask/rpc.hpp"
#include "ditask/torch/export.hpp"

namespace ditask {

/// Makes a LibTorch optimizer over `parameters` (all on this worker): what a DistributedOptimizer
/// creates on each worker that owns some of its parameters.
using OptimizerFactory =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<at::Tensor> parameters)>;

/// Names `factory` on this worker: define the same name on every worker that owns parameters,
/// before task().start(), as rpc().define() (e.g. "sgd" making torch::optim::SGD with lr 0.05).
/// Errors: ditask::Error for an empty name.
DITASK_TORCH_API void define_optimizer(const std::string& name, OptimizerFactory factory);

/// Handles to `module`'s parameters (each owned by this worker), for a DistributedOptimizer.
/// Errors: ditask::Error outside a running worker.
DITASK_TORCH_API std::vector<RRef<at::Tensor>> parameter_rrefs(const torch::nn::Module& module);
/// A handle to one tensor of this worker (a parameter).
DITASK_TORCH_API RRef<at::Tensor> parameter_rref(const at::Tensor& parameter);

/// torch.distributed.optim.DistributedOptimizer: the parameter handles are grouped by owner, and
/// one optimizer made by the factory `optimizer` (define_optimizer) lives on each owner; step()
/// has every owner step with the gradients a context holds there, and waits for all.
/// Thread: one at a time.
class DITASK_TORCH_API DistributedOptimizer {
 public:
  /// Errors: ditask::Error for no parameters; RpcError when an owner fails to make its optimizer
  /// (unknown factory name, a parameter handle it does not own).
  DistributedOptimizer(const std::string& optimizer, const std::vector<RRef<at::Tensor>>& parameters);
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;
  /// One step of every owner's optimizer with context `context_id`'s gradients (a parameter
  /// without one there is left as it is). Errors: RpcError from the first owner that failed,
  /// after every owner answered.
  void step(std::int64_t context_id);
  /// The workers that own parameters of this optimizer.
  std::vector<std::int64_t> owners() const;

 private:
  struct Owners;
  std::unique_ptr<Owners> owners_;
};

}  // namespace ditask
