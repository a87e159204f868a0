// SPDX-License-Identifier: MIT
// The torch_tests module, part 3: how a distributed backward fails. Checked by
// tests/torch/torch_integration_test.cpp.
#include <torch/torch.h>

#include <cstdlib>

#include "torch_tests.hpp"

using namespace mesh_tests;

namespace {

at::Tensor& weight() {
  static at::Tensor w = torch::tensor({1.0, 2.0, 3.0}, torch::kDouble).requires_grad_();
  return w;
}

Shared<bool>& released() {
  static Shared<bool> r;
  return r;
}

// w * x, then 2 *: `hook` runs in the backward part on this node, between the two.
template <class Hook>
at::Tensor scaled_with_hook(const at::Tensor& x, Hook hook) {
  auto t = weight() * x;
  t.register_hook(hook);
  return t * 2;
}

void define_failure_functions() {
  auto& rpc = ditask::rpc();
  rpc.define("boom", [](at::Tensor x) {
    return scaled_with_hook(x, [](at::Tensor) -> at::Tensor { throw std::runtime_error("boom in backward"); });
  });
  rpc.define("stall", [](at::Tensor x) {
    return scaled_with_hook(x, [](at::Tensor g) {
      // Until node 0 says so (its backward gave up on this part), at most a minute.
      released().wait([](bool r) { return r; }, "node 0's release", std::chrono::minutes(1));
      return g;
    });
  });
  rpc.define("die", [](at::Tensor x) {
    return scaled_with_hook(x, [](at::Tensor g) {
      std::_Exit(7);  // dies in its part of the backward
      return g;
    });
  });
}

// A node that serves the failing functions: "release" ends a stalled part.
void serve_failures() {
  ditask::task().on("release", [] { released().update([](bool& r) { r = true; }); });
  torch_tests::serve();
}

at::Tensor input() { return torch::tensor({1.0, 1.0, 1.0}, torch::kDouble).requires_grad_(); }

std::string backward_error(const char* function) {
  ditask::dist_autograd::Context context;
  const auto y = ditask::rpc().call<at::Tensor>(1, function, input());
  return torch_tests::error_of([&] { ditask::dist_autograd::backward(context.id(), {y.sum()}); });
}

}  // namespace

// backward_fails (2 workers): node 1's part throws ("boom"), then never ends within the
// backward's timeout of 1.5 s ("stall"). Node 0 prints "ERROR <what>" for each and
// "RESULT live=<node 0>,<node 1>".
DITASK_MAIN(backward_fails) {
  torch_tests::define_common();
  define_failure_functions();
  auto& task = ditask::task();
  auto running = task.start();
  if (node_id() != 0) {
    serve_failures();
    return;
  }
  task.ready();
  say("ERROR", backward_error("boom"));
  ditask::dist_autograd::set_backward_timeout(std::chrono::milliseconds(1500));
  say("ERROR", backward_error("stall"));
  ditask::dist_autograd::set_backward_timeout(std::chrono::seconds(60));
  task.emit_to_node(1, "release");
  result("live=" + torch_tests::live_everywhere({0, 1}));
}

// backward_node_dies (2 workers, --auto-recover): node 1 dies in its part of the backward
// ("die"). Node 0 prints "ERROR <what>", waits for node 1's restart and prints "RESULT
// live=<node 0>,<node 1>".
DITASK_MAIN(backward_node_dies) {
  torch_tests::define_common();
  define_failure_functions();
  auto& task = ditask::task();
  Shared<bool> back;  // before start(): it outlives the handler below
  auto running = task.start();
  if (node_id() != 0) {
    serve_failures();
    return;
  }
  // The restart's join as an event: remote calls know of it once it was dispatched (a peer
  // list read earlier may show it before).
  task.on(ditask::events::peer_joined, [&back](const ditask::Kwargs& peer) {
    if (peer.get<std::int64_t>("attempt") >= 1) {
      back.update([](bool& b) { b = true; });
    }
  });
  task.ready();
  say("ERROR", backward_error("die"));
  back.wait([](bool b) { return b; }, "node 1's restart", std::chrono::minutes(2));
  result("live=" + torch_tests::live_everywhere({0, 1}));
}
