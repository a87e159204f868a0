// SPDX-License-Identifier: MIT
#pragma once

/// Distributed autograd over ditask's remote calls, as torch.distributed.autograd offers it:
/// a context records the tensors that cross workers inside it, backward runs every worker's part
/// of the graph, and the gradients stay in the context on the worker that owns each parameter.
/// docs/autograd.md.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <ATen/Tensor.h>

#include "ditask/torch/export.hpp"

namespace ditask::dist_autograd {

namespace detail {
class ContextState;
}

/// One distributed autograd context (`with dist_autograd.context() as context_id`), current on
/// the thread that made it until it ends. Its id is unique in the job without coordination:
/// (node id << 48) | a counter of this worker. Remote calls made on this thread while it is
/// current, whose arguments hold tensors that require grad, record a send here and a receive on
/// the callee, which runs the call with the context current (so nested calls join it); a result
/// that requires grad records the reverse pair. Ending it releases it here and on every worker
/// it exchanged tensors with, transitively. Not copyable or movable. Thread: the one that made it.
class DITASK_TORCH_API Context {
 public:
  /// Opens a context, current on this thread. Errors: ditask::Error when this thread has one
  /// already (as torch: one context per thread at a time).
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /// Its id (what backward(), get_gradients() and DistributedOptimizer::step() take).
  std::int64_t id() const noexcept { return id_; }

 private:
  std::int64_t id_;
  std::shared_ptr<detail::ContextState> state_;
};

/// Runs the backward pass of context `context_id` from `roots` (each a scalar, or given the
/// gradient 1 for every element): this worker's part of the graph, then each other worker's,
/// reached through the tensors the context recorded, recursively; returns once every part ran.
/// Gradients accumulate in the context on the worker that owns each parameter (get_gradients),
/// never in `.grad`. `retain_graph`: the graph may be used by another backward of the context.
/// Errors: ditask::Error for an unknown context, a second backward without retain_graph, or
/// roots that do not require grad; a part that fails on another worker fails it with "node N:
/// ..." and what failed there; a worker that leaves fails it at once; one that does not answer
/// within the backward timeout fails it naming the pending sends and receives and their nodes.
DITASK_TORCH_API void backward(std::int64_t context_id, const std::vector<at::Tensor>& roots, bool retain_graph = false);

/// The gradients a context holds on this worker: one per parameter (a leaf tensor that requires
/// grad) this worker's part of a backward reached, summed over every path and every backward.
class DITASK_TORCH_API Gradients {
 public:
  Gradients() = default;
  explicit Gradients(std::vector<std::pair<at::Tensor, at::Tensor>> items) : items_(std::move(items)) {}
  /// The gradient of `parameter` (the same tensor, not an equal one); an undefined tensor when
  /// the context has none for it.
  at::Tensor at(const at::Tensor& parameter) const;
  /// Whether the context has a gradient for `parameter`.
  bool contains(const at::Tensor& parameter) const { return at(parameter).defined(); }
  /// (parameter, gradient) pairs.
  const std::vector<std::pair<at::Tensor, at::Tensor>>& items() const noexcept { return items_; }
  std::size_t size() const noexcept { return items_.size(); }

 private:
  std::vector<std::pair<at::Tensor, at::Tensor>> items_;
};

/// The gradients of context `context_id` on this worker (torch's get_gradients). Errors:
/// ditask::Error for a context this worker does not know (never joined, or released).
DITASK_TORCH_API Gradients get_gradients(std::int64_t context_id);

/// The context current on this thread: the one this thread made, or the context of the call it
/// serves; -1 when none.
DITASK_TORCH_API std::int64_t current_context_id() noexcept;

/// Contexts alive on this worker (torch's getDebugInfo "num_current_contexts"): 0 again on
/// every worker once every context ended.
DITASK_TORCH_API std::size_t live_contexts() noexcept;

/// How long backward() waits for another worker's part before it fails naming what it waits
/// for (default 60 s). Errors: ditask::Error for a timeout that is not positive.
DITASK_TORCH_API void set_backward_timeout(std::chrono::milliseconds timeout);

}  // namespace ditask::dist_autograd
