// SPDX-License-Identifier: MIT
#pragma once

/// The LibTorch component of ditask (`find_package(ditask COMPONENTS torch)`, target
/// ditask::torch): tensors as remote-call arguments and results, distributed autograd and the
/// distributed optimizer, as torch.distributed.rpc / .autograd / .optim offer them.
/// docs/autograd.md.

#include "ditask/ditask.hpp"
#include "ditask/torch/dist_autograd.hpp"
#include "ditask/torch/distributed_optimizer.hpp"
#include "ditask/torch/tensor_wire.hpp"
