// SPDX-License-Identifier: MIT
// The torch_tests module, part 2: the protocol of distributed autograd on small graphs whose
// gradients are known. Checked by tests/torch/torch_integration_test.cpp.
#include <torch/torch.h>

#include <thread>

#include "torch_tests.hpp"

using namespace mesh_tests;

namespace {

// This node's parameters: w1 on node 1 (scale), w2 on node 2 (scale2).
at::Tensor& w1() {
  static at::Tensor w = torch::tensor({1.0, 2.0, 3.0}, torch::kDouble).requires_grad_();
  return w;
}
at::Tensor& w2() {
  static at::Tensor w = torch::tensor({0.5, -1.0, 2.0}, torch::kDouble).requires_grad_();
  return w;
}

at::Tensor grad_of(const at::Tensor& parameter, std::int64_t context_id) {
  const auto g = ditask::dist_autograd::get_gradients(context_id).at(parameter);
  return g.defined() ? g : at::zeros_like(parameter);
}

bool same(const at::Tensor& a, const at::Tensor& b) { return a.sizes() == b.sizes() && at::allclose(a, b, 1e-12, 1e-12); }

void define_protocol_functions() {
  auto& rpc = ditask::rpc();
  rpc.define("scale", [](at::Tensor x) { return w1() * x; });
  rpc.define("w1_grad", [](std::int64_t context_id) { return grad_of(w1(), context_id); });
  rpc.define("scale2", [](at::Tensor y) { return w2() * y; });
  rpc.define("w2_grad", [](std::int64_t context_id) { return grad_of(w2(), context_id); });
  // node 1 -> node 2 inside the caller's context: the nested call joins it.
  rpc.define("chain", [](at::Tensor x) { return ditask::rpc().call<at::Tensor>(2, "scale2", w1() * x); });
}

at::Tensor input(double a, double b, double c) { return torch::tensor({a, b, c}, torch::kDouble).requires_grad_(); }

}  // namespace

// protocol (3 workers): node 0 checks, with node 1 holding w1 (scale: w1 * x) and node 2 w2:
// two contexts at once on two threads stay apart; a nested call (node 1 calls node 2 inside the
// call) joins the context; a parameter used by two calls gets the sum; a recorded result that
// the loss does not use gets nothing; a second backward needs retain_graph; a late call for a
// released context is refused without bringing it back; every node ends with 0 contexts.
// "RESULT isolated=ok nested=ok sum=ok unreachable=ok retain=ok late=ok live=0,0,0".
DITASK_MAIN(protocol) {
  torch_tests::define_common();
  define_protocol_functions();
  auto& task = ditask::task();
  auto running = task.start();
  if (node_id() != 0) {
    torch_tests::serve();
    return;
  }
  task.ready();
  auto& rpc = ditask::rpc();
  const auto w1_value = torch::tensor({1.0, 2.0, 3.0}, torch::kDouble);
  const auto w2_value = torch::tensor({0.5, -1.0, 2.0}, torch::kDouble);

  // Two contexts at once: each thread's x and node 1's w1 get that context's gradients only.
  std::string isolated = "ok";
  {
    Shared<int> arrived;
    auto run = [&](double base, std::string& verdict) {
      ditask::dist_autograd::Context context;
      const auto x = input(base, base + 1, base + 2);
      const auto y = rpc.call<at::Tensor>(1, "scale", x);
      arrived.update([](int& n) { ++n; });
      arrived.wait([](int n) { return n == 2; }, "the other context's forward");  // both open at once
      ditask::dist_autograd::backward(context.id(), {y.sum()});
      const bool ok = same(grad_of(x, context.id()), w1_value) &&
                      same(rpc.call<at::Tensor>(1, "w1_grad", context.id()), x.detach());
      verdict = ok ? "ok" : "wrong";
    };
    std::string a, b;
    std::thread t1([&] { run(1.0, a); });
    std::thread t2([&] { run(10.0, b); });
    t1.join();
    t2.join();
    isolated = a == "ok" && b == "ok" ? "ok" : a + "/" + b;
  }

  std::string nested = "wrong";
  {
    ditask::dist_autograd::Context context;
    const auto x = input(1.0, 1.0, 2.0);
    const auto z = rpc.call<at::Tensor>(1, "chain", x);
    ditask::dist_autograd::backward(context.id(), {z.sum()});
    const bool ok = same(grad_of(x, context.id()), w1_value * w2_value) &&
                    same(rpc.call<at::Tensor>(1, "w1_grad", context.id()), w2_value * x.detach()) &&
                    same(rpc.call<at::Tensor>(2, "w2_grad", context.id()), w1_value * x.detach());
    nested = ok ? "ok" : "wrong";
  }

  std::string sum = "wrong", unreachable = "wrong";
  {
    ditask::dist_autograd::Context context;
    const auto x1 = input(1.0, 2.0, 3.0), x2 = input(4.0, 5.0, 6.0);
    const auto y1 = rpc.call<at::Tensor>(1, "scale", x1);
    const auto y2 = rpc.call<at::Tensor>(1, "scale", x2);
    ditask::dist_autograd::backward(context.id(), {y1.sum() + y2.sum()});
    sum = same(rpc.call<at::Tensor>(1, "w1_grad", context.id()), x1.detach() + x2.detach()) ? "ok" : "wrong";
  }
  {
    ditask::dist_autograd::Context context;
    const auto x1 = input(1.0, 2.0, 3.0), x2 = input(4.0, 5.0, 6.0);
    const auto used = rpc.call<at::Tensor>(1, "scale", x1);
    const auto unused = rpc.call<at::Tensor>(1, "scale", x2);  // recorded, never reached
    ditask::dist_autograd::backward(context.id(), {used.sum()});
    unreachable = same(rpc.call<at::Tensor>(1, "w1_grad", context.id()), x1.detach()) &&
                          !ditask::dist_autograd::get_gradients(context.id()).contains(x2)
                      ? "ok"
                      : "wrong";
  }

  std::string retain = "wrong";
  {
    ditask::dist_autograd::Context context;
    const auto x = input(1.0, 2.0, 3.0);
    const auto loss = rpc.call<at::Tensor>(1, "scale", x).sum();
    ditask::dist_autograd::backward(context.id(), {loss}, /*retain_graph=*/true);
    ditask::dist_autograd::backward(context.id(), {loss});
    const auto again = torch_tests::error_of([&] { ditask::dist_autograd::backward(context.id(), {loss}); });
    const bool twice = same(rpc.call<at::Tensor>(1, "w1_grad", context.id()), 2 * x.detach());
    retain = twice && again.find("ran its backward already, and its graph was freed") != std::string::npos ? "ok" : again;
  }

  std::int64_t released = 0;
  {
    ditask::dist_autograd::Context context;
    released = context.id();
    (void)rpc.call<at::Tensor>(1, "scale", input(1.0, 1.0, 1.0));
  }
  const auto late = torch_tests::error_of([&] {
    rpc.call<void>(1, "dist_autograd.backward", released, std::int64_t{1}, torch::ones({3}, torch::kDouble), false);
  });
  const std::string late_ok =
      late.find("node 1 has no distributed autograd context " + std::to_string(released) + " (it was released there)") !=
              std::string::npos
          ? "ok"
          : late;
  result("isolated=" + isolated + " nested=" + nested + " sum=" + sum + " unreachable=" + unreachable +
         " retain=" + retain + " late=" + late_ok + " live=" + torch_tests::live_everywhere({0, 1, 2}));
}
