// SPDX-License-Identifier: MIT
// The distributed backward pass (docs/autograd.md "Backward"). A worker's part runs LibTorch's
// own autograd from some roots to the leaves of its local graph: the gradients of parameters stay
// in the context; those of tensors it received go back, in a call, to the worker that sent them,
// whose part runs from that send in turn. A part answers once every part it started answered,
// so the first backward returns when every worker's part ran. Gradients are linear in what flows
// back, so a tensor reached along several paths gets the sum, part by part.
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include <atomic>
#include <map>
#include <typeinfo>
#include <string>
#include <unordered_set>

#include <ditask/ditask.hpp>

#include "contexts.hpp"
#include "ditask/torch/tensor_wire.hpp"

namespace ditask::dist_autograd {

namespace detail {

namespace {

std::atomic<std::int64_t> g_timeout_ms{60000};

// A gradient to send back: to the send `message` on node `node`.
struct Outgoing {
  std::int64_t node = 0;
  std::int64_t message = 0;
  at::Tensor gradient;
};

// The leaves reachable from `roots` (the tensors whose gradients autograd can give).
std::vector<at::Tensor> leaves_of(const std::vector<at::Tensor>& roots) {
  std::vector<at::Tensor> leaves;
  std::unordered_set<const torch::autograd::Node*> seen;
  std::unordered_set<const void*> seen_leaves;
  std::vector<torch::autograd::Node*> stack;
  seen.reserve(256);
  stack.reserve(64);
  auto add_leaf = [&](const at::Tensor& t) {
    if (seen_leaves.insert(t.unsafeGetTensorImpl()).second) {
      leaves.push_back(t);
    }
  };
  for (const auto& root : roots) {
    if (root.grad_fn()) {
      stack.push_back(root.grad_fn().get());
    } else if (root.requires_grad()) {
      add_leaf(root);  // a root that is itself a leaf (a received tensor sent straight back)
    }
  }
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) {
      continue;
    }
    // typeid, not dynamic_cast: this runs for every node of the graph (an LSTM's has hundreds).
    if (typeid(*node) == typeid(torch::autograd::AccumulateGrad)) {
      add_leaf(static_cast<torch::autograd::AccumulateGrad*>(node)->variable);
      continue;
    }
    for (const auto& edge : node->next_edges()) {
      if (edge.function) {
        stack.push_back(edge.function.get());
      }
    }
  }
  return leaves;
}

// This worker's part from `roots` with `gradients`: parameters' gradients go into the context,
// received tensors' gradients are returned, to go back to their senders.
std::vector<Outgoing> local_part(ContextState& context, const std::vector<at::Tensor>& roots,
                                 const std::vector<at::Tensor>& gradients) {
  const auto leaves = leaves_of(roots);
  if (leaves.empty()) {
    return {};
  }
  std::vector<at::Tensor> grads;
  try {
    const std::lock_guard pass(context.pass_mutex());
    // The graph is kept: another part of the same backward may pass through it again.
    grads = torch::autograd::grad(roots, leaves, gradients, /*retain_graph=*/true, /*create_graph=*/false,
                                  /*allow_unused=*/true);
  } catch (const c10::Error& e) {
    throw Error(e.what_without_backtrace());  // LibTorch's message, without its 40 frames
  }
  std::vector<Outgoing> out;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!grads[i].defined()) {
      continue;
    }
    if (const auto recv = context.recv_of(leaves[i])) {
      out.push_back(Outgoing{recv->from, recv->message, grads[i]});
    } else {
      context.accumulate(leaves[i], grads[i]);
    }
  }
  return out;
}

// Sends each gradient back to its send's worker and waits for all of their parts. Errors:
// ditask::Error naming the node, the message and what failed there; at the timeout, naming
// every pair still pending.
void run_remote_parts(const ContextState& context, std::vector<Outgoing> outgoing, bool retain) {
  const auto timeout = std::chrono::milliseconds(g_timeout_ms.load());
  std::vector<std::pair<Outgoing, Future<void>>> calls;
  for (auto& o : outgoing) {
    auto future = rpc().call_async<void>(Callee(o.node).within(timeout), "dist_autograd.backward", context.id(),
                                         o.message, o.gradient.detach(), retain);
    calls.emplace_back(std::move(o), std::move(future));
  }
  std::string first_error, first_hint;
  std::vector<std::string> pending;
  for (auto& [o, future] : calls) {
    try {
      future.get();
    } catch (const RpcError& e) {
      const std::string pair = "send #" + std::to_string(o.message & kCounterMask) + " of node " +
                               std::to_string(o.node) + " (received here)";
      if (e.kind() == RpcError::Kind::timeout) {
        pending.push_back(pair);
      } else if (first_error.empty()) {
        first_error = "node " + std::to_string(o.node) + ": " + e.reason();
        first_hint = e.hint();
      }
    }
  }
  if (!first_error.empty()) {
    throw Error(first_error, first_hint);
  }
  if (!pending.empty()) {
    std::string list;
    for (const auto& p : pending) {
      if (!list.empty()) {
        list += ", ";
      }
      list += p;
    }
    throw Error("no answer within " + std::to_string(timeout.count()) + " ms for the gradients of " + list,
                "is that worker alive and not stopped? raise dist_autograd::set_backward_timeout()");
  }
}

}  // namespace

// The part a gradient sent back to this worker starts (the RPC function "dist_autograd.backward").
void serve_backward(std::int64_t context_id, std::int64_t message, at::Tensor gradient, bool retain) {
  const auto node = ditask::task().router().node_id();
  const auto context = Registry::get().find(context_id);
  if (!context) {
    throw Error("node " + std::to_string(node) + " has no distributed autograd context " + std::to_string(context_id) +
                " (it was released there)");
  }
  const auto send = context->send(message);
  if (!send) {
    throw Error("node " + std::to_string(node) + ": context " + std::to_string(context_id) + " has no send #" +
                std::to_string(message & kCounterMask));
  }
  std::vector<Outgoing> outgoing;
  try {
    outgoing = local_part(*context, {send->tensor}, {gradient});
  } catch (const std::exception& e) {
    // Which part of the graph failed: the autograd function that made the tensor sent.
    const auto& made_by = send->tensor.grad_fn();
    throw Error(std::string(e.what()) + " (in the part of the graph behind send #" +
                std::to_string(message & kCounterMask) + ", made by " +
                (made_by ? made_by->name() : std::string("a leaf")) + ")");
  }
  run_remote_parts(*context, std::move(outgoing), retain);
}

}  // namespace detail

void backward(std::int64_t context_id, const std::vector<at::Tensor>& roots, bool retain_graph) {
  const auto context = detail::Registry::get().find(context_id);
  if (!context) {
    throw Error("no distributed autograd context " + std::to_string(context_id) + " on this worker",
                "run backward inside the context, on the worker that made it or took part in it");
  }
  if (roots.empty()) {
    throw Error("backward of context " + std::to_string(context_id) + " has no roots", "pass the loss: backward(id, {loss})");
  }
  std::vector<at::Tensor> gradients;
  for (const auto& root : roots) {
    if (!root.requires_grad()) {
      throw Error("a root of the backward of context " + std::to_string(context_id) + " does not require grad",
                  "compute the loss from parameters (or received tensors) that require grad");
    }
    gradients.push_back(at::ones_like(root));
  }
  if (!context->begin_backward(retain_graph)) {
    throw Error("context " + std::to_string(context_id) + " ran its backward already, and its graph was freed",
                "pass retain_graph = true to the earlier backward to run another");
  }
  try {
    auto outgoing = detail::local_part(*context, roots, gradients);
    detail::run_remote_parts(*context, std::move(outgoing), retain_graph);
  } catch (const Error& e) {
    throw Error("backward of context " + std::to_string(context_id) + " failed: " + e.what(), e.hint());
  } catch (const std::exception& e) {
    throw Error("backward of context " + std::to_string(context_id) + " failed: " + e.what());
  }
}

void set_backward_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw Error("the backward timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  }
  detail::g_timeout_ms = timeout.count();
}

}  // namespace ditask::dist_autograd
