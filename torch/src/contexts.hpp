// SPDX-License-Identifier: MIT
// Distributed autograd contexts on one worker: what each recorded (the tensors it sent and
// received, the gradients of its parameters, the workers it exchanged tensors with), the
// process-wide registry of the live ones, and which is current on a thread. docs/autograd.md.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <ATen/Tensor.h>

#include "ditask/torch/dist_autograd.hpp"

namespace ditask::dist_autograd::detail {

/// The bits of an id (context or message) that count within its worker: id = (node << 48) | counter.
inline constexpr std::int64_t kCounterMask = (std::int64_t{1} << 48) - 1;

/// The node a context or message id was made on: ids are (node << 48) | counter.
inline std::int64_t node_of(std::int64_t id) noexcept { return id >> 48; }

/// A tensor this worker sent in a context: its gradient comes back to it in backward.
struct Send {
  at::Tensor tensor;
  std::int64_t to = -1;
};

/// A tensor this worker received in a context (a leaf that requires grad): its gradient goes
/// back to the send of message `message` on node `from`.
struct Recv {
  std::int64_t message = 0;
  std::int64_t from = -1;
};

/// One context as this worker knows it. Thread: any (one mutex); a backward's local parts run
/// one at a time (pass_mutex()).
class ContextState {
 public:
  explicit ContextState(std::int64_t id) : id_(id) {}
  std::int64_t id() const noexcept { return id_; }
  /// Records `tensor` sent to node `to`; returns its message id (made by `next_message`).
  std::int64_t add_send(const at::Tensor& tensor, std::int64_t to, std::int64_t message);
  /// Records `leaf` received as message `message` from node `from`.
  void add_recv(const at::Tensor& leaf, std::int64_t message, std::int64_t from);
  /// The send of message `message`, if this context made it here.
  std::optional<Send> send(std::int64_t message) const;
  /// The receive that `leaf` is, if it is one of this context's.
  std::optional<Recv> recv_of(const at::Tensor& leaf) const;
  /// Adds `gradient` to `parameter`'s.
  void accumulate(const at::Tensor& parameter, const at::Tensor& gradient);
  /// Every (parameter, gradient).
  Gradients gradients() const;
  /// The workers this context exchanged calls or tensors with here.
  std::set<std::int64_t> peers() const;
  /// Adds a worker this context exchanged a call with.
  void add_peer(std::int64_t node);
  /// Takes the right to run a backward: false when an earlier one freed the graph (ran without
  /// retain_graph). `retain`: this one keeps it.
  bool begin_backward(bool retain);
  /// Serialises this worker's local passes of the context's backward.
  std::mutex& pass_mutex() noexcept { return pass_mutex_; }

 private:
  const std::int64_t id_;
  mutable std::mutex mutex_;
  std::map<std::int64_t, Send> sends_;                          // by message id
  std::map<const void*, std::pair<at::Tensor, Recv>> recvs_;    // by TensorImpl (the leaf kept alive)
  std::map<const void*, std::pair<at::Tensor, at::Tensor>> grads_;  // by TensorImpl: parameter, gradient
  std::set<std::int64_t> peers_;
  bool graph_freed_ = false;
  std::mutex pass_mutex_;
};

/// The live contexts of this process. Thread: any.
class Registry {
 public:
  /// The one registry of this process.
  static Registry& get();
  /// A new context made here (its id from this node's counter).
  std::shared_ptr<ContextState> create();
  /// The context `id` if it lives here.
  std::shared_ptr<ContextState> find(std::int64_t id) const;
  /// The context `id` another worker made, joined here on first use; null when it was released
  /// here already (a late message does not bring it back).
  std::shared_ptr<ContextState> join(std::int64_t id);
  /// Removes context `id`: its peers are returned (to be told), empty when it was not here.
  std::set<std::int64_t> release(std::int64_t id);
  /// A message id of this node.
  std::int64_t next_message();
  /// Contexts alive here.
  std::size_t live() const;

 private:
  Registry() = default;
  std::int64_t node() const;

  mutable std::mutex mutex_;
  std::map<std::int64_t, std::shared_ptr<ContextState>> contexts_;
  std::set<std::int64_t> released_;     // recently released ids (a late message is dropped)
  std::deque<std::int64_t> released_order_;
  std::int64_t next_context_ = 1;
  std::int64_t next_message_ = 1;
};

/// The context current on this thread: the one it made (Context), else the context of the call
/// it serves; null when none.
std::shared_ptr<ContextState> current();
/// Makes `context` this thread's own current context (null: none).
void set_thread_context(std::shared_ptr<ContextState> context);
/// Sends the current context with every call a thread makes, and makes it current on the
/// callee while it serves the call (ditask's call context hooks); idempotent.
void propagate_contexts_with_calls();

/// Releases context `id` here and on every worker it exchanged tensors with (but `from`, which
/// told this one: -1 when it ends here), waiting for their answers, so that once the context
/// ends where it was made, every worker it reached has released it. Never throws.
void release_everywhere(std::int64_t id, std::int64_t from) noexcept;

/// Defines the RPC functions and classes this component serves (idempotent): the backward and
/// release of contexts, the Tensor class of parameter handles, the optimizers' owner side.
void define_remote_functions();

}  // namespace ditask::dist_autograd::detail
