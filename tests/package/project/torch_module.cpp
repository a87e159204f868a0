// SPDX-License-Identifier: MIT
// A user's module of distributed autograd, built against the installed ditask::torch: node 0
// sends x to node 1, which squares it; the backward through both gives 2x.
#include <iostream>

#include <ditask/torch.hpp>
#include <torch/torch.h>

DITASK_MAIN(main) {
  ditask::rpc().define("square", [](at::Tensor x) { return x * x; });
  auto& task = ditask::task();
  auto running = task.start();
  if (task.router().node_id() != 0) {
    auto finish = task.waiter(ditask::events::finish);
    task.ready();
    finish.wait(std::chrono::minutes(2));
    return;
  }
  task.ready();
  const auto x = torch::tensor({1.0, -2.0, 3.0}).requires_grad_();
  bool ok = false;
  {
    ditask::dist_autograd::Context context;
    const auto y = ditask::rpc().call<at::Tensor>(1, "square", x);
    ditask::dist_autograd::backward(context.id(), {y.sum()});
    ok = at::allclose(ditask::dist_autograd::get_gradients(context.id()).at(x), 2 * x.detach());
  }
  std::cout << "torch_module: gradient 2x " << (ok ? "ok" : "WRONG") << ", contexts left "
            << ditask::dist_autograd::live_contexts() << std::endl;
}
