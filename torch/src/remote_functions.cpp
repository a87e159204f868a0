// SPDX-License-Identifier: MIT
// What every worker with this component serves: the backward parts and releases of contexts,
// the Tensor class (parameter handles) and the optimizers' owner side. Defined when the library
// loads (before any task starts), and again harmlessly by the API's entry points.
#include <mutex>

#include <ditask/ditask.hpp>

#include "contexts.hpp"
#include "optimizer_owner.hpp"

namespace ditask::dist_autograd::detail {

void serve_backward(std::int64_t context_id, std::int64_t message, at::Tensor gradient, bool retain);

void define_remote_functions() {
  static std::once_flag once;
  std::call_once(once, [] {
    propagate_contexts_with_calls();
    auto& r = rpc();
    // Concurrent: a part may call back into the worker that is waiting for it (trainer -> ps ->
    // trainer), and a release may reach a worker whose own release waits on the sender.
    r.define_concurrent("dist_autograd.backward", [](std::int64_t context_id, std::int64_t message,
                                                     at::Tensor gradient, bool retain) {
      serve_backward(context_id, message, std::move(gradient), retain);
    });
    r.define_concurrent("dist_autograd.release", [](std::int64_t context_id, const EventMeta& caller) {
      release_everywhere(context_id, caller.sender);
    });
    r.define_class<at::Tensor>("Tensor");
    r.define_class<ditask::detail::OptimizerOwner>("DistributedOptimizer.Owner")
        .constructor<std::string, std::vector<RRef<at::Tensor>>>()
        .method("step", &ditask::detail::OptimizerOwner::step);
  });
}

namespace {
// The library's own definitions, made as it loads: a worker that only serves (a parameter
// server) answers backward parts and releases without calling the API first.
const bool g_defined = (define_remote_functions(), true);
}  // namespace

}  // namespace ditask::dist_autograd::detail
