// SPDX-License-Identifier: MIT
// What the entries of the torch_tests module share (beside the mesh_tests helpers): the remote
// classes and functions every node defines, serving until node 0 is done, and RESULT wording.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ditask/torch.hpp>

#include "../../plugins/mesh_tests/mesh_tests.hpp"
#include "../examples/rnn/rnn_model.hpp"

namespace torch_tests {

/// Defines, on every node before start(): the tutorial's classes, the optimizers "sgd" (lr 0.05)
/// and "adam" (lr 0.01), "live" (this node's live contexts) and the scenario functions.
void define_common();

/// A node that only serves: ready(), then waits for node 0's finish (at most 5 minutes).
void serve();

/// "ok" when `value` < `bound`, else the value (so a failing CHECK shows it).
std::string below(double value, double bound);

/// The live contexts of each of `nodes` (this one's own without a call), "a,b,...".
std::string live_everywhere(const std::vector<std::int64_t>& nodes);

/// The RpcError or ditask::Error `fn` throws, as "<what>", or "no error".
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace torch_tests
