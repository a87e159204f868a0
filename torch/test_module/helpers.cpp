// SPDX-License-Identifier: MIT
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <cstdio>

#include "torch_tests.hpp"

namespace torch_tests {

void define_common() {
  rnn::define_classes();
  ditask::define_optimizer("sgd", [](std::vector<at::Tensor> params) {
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.05));
  });
  ditask::define_optimizer("adam", [](std::vector<at::Tensor> params) {
    return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(0.01));
  });
  ditask::rpc().define("live", [] { return static_cast<std::int64_t>(ditask::dist_autograd::live_contexts()); });
}

void serve() {
  auto finish = ditask::task().waiter(ditask::events::finish);
  ditask::task().ready();
  if (!finish.wait(std::chrono::minutes(5))) {
    throw std::runtime_error("no finish from node 0 within 5 minutes");
  }
}

std::string below(double value, double bound) {
  if (value < bound) {
    return "ok";
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string live_everywhere(const std::vector<std::int64_t>& nodes) {
  std::string out;
  for (const auto node : nodes) {
    const auto n = node == mesh_tests::node_id() ? static_cast<std::int64_t>(ditask::dist_autograd::live_contexts())
                                                 : ditask::rpc().call<std::int64_t>(node, "live");
    if (!out.empty()) {
      out += ',';  // not `("" or ",") + string`: GCC 12 warns (-Wrestrict) on that, wrongly
    }
    out += std::to_string(n);
  }
  return out;
}

}  // namespace torch_tests
