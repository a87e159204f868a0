// SPDX-License-Identifier: MIT
// Contexts: their records, the registry, the current one per thread, and their release (here
// and, transitively, on every worker a context exchanged tensors with).
#include "contexts.hpp"

#include <span>

#include <ditask/ditask.hpp>
#include <ditask/runtime/log.hpp>

#include "ditask/torch/tensor_wire.hpp"

namespace ditask::dist_autograd::detail {

namespace {

constexpr std::size_t kReleasedKept = 100000;  // ids of released contexts remembered

thread_local std::shared_ptr<ContextState> t_context;  // the Context this thread made

const void* key_of(const at::Tensor& t) { return t.unsafeGetTensorImpl(); }

}  // namespace

// ---- ContextState ----

std::int64_t ContextState::add_send(const at::Tensor& tensor, std::int64_t to, std::int64_t message) {
  std::lock_guard lock(mutex_);
  sends_[message] = Send{tensor, to};
  peers_.insert(to);
  return message;
}

void ContextState::add_recv(const at::Tensor& leaf, std::int64_t message, std::int64_t from) {
  std::lock_guard lock(mutex_);
  recvs_[key_of(leaf)] = {leaf, Recv{message, from}};
  peers_.insert(from);
}

std::optional<Send> ContextState::send(std::int64_t message) const {
  std::lock_guard lock(mutex_);
  const auto it = sends_.find(message);
  if (it == sends_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<Recv> ContextState::recv_of(const at::Tensor& leaf) const {
  std::lock_guard lock(mutex_);
  const auto it = recvs_.find(key_of(leaf));
  if (it == recvs_.end()) {
    return std::nullopt;
  }
  return it->second.second;
}

void ContextState::accumulate(const at::Tensor& parameter, const at::Tensor& gradient) {
  std::lock_guard lock(mutex_);
  auto [it, fresh] = grads_.try_emplace(key_of(parameter), parameter, gradient);
  if (!fresh) {
    it->second.second = it->second.second.add(gradient);
  }
}

Gradients ContextState::gradients() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<at::Tensor, at::Tensor>> items;
  items.reserve(grads_.size());
  for (const auto& [key, pair] : grads_) {
    items.push_back(pair);
  }
  return Gradients(std::move(items));
}

std::set<std::int64_t> ContextState::peers() const {
  std::lock_guard lock(mutex_);
  return peers_;
}

void ContextState::add_peer(std::int64_t node) {
  std::lock_guard lock(mutex_);
  peers_.insert(node);
}

bool ContextState::begin_backward(bool retain) {
  std::lock_guard lock(mutex_);
  if (graph_freed_) {
    return false;
  }
  graph_freed_ = !retain;
  return true;
}

// ---- Registry ----

Registry& Registry::get() {
  static Registry registry;
  return registry;
}

std::int64_t Registry::node() const {
  const auto& router = ditask::task().router();
  return router.is_active() ? router.node_id() : 0;
}

std::shared_ptr<ContextState> Registry::create() {
  const std::int64_t node_bits = node() << 48;
  std::lock_guard lock(mutex_);
  const std::int64_t id = node_bits | (next_context_++ & kCounterMask);
  auto context = std::make_shared<ContextState>(id);
  contexts_[id] = context;
  return context;
}

std::shared_ptr<ContextState> Registry::find(std::int64_t id) const {
  std::lock_guard lock(mutex_);
  const auto it = contexts_.find(id);
  return it == contexts_.end() ? nullptr : it->second;
}

std::shared_ptr<ContextState> Registry::join(std::int64_t id) {
  std::lock_guard lock(mutex_);
  if (const auto it = contexts_.find(id); it != contexts_.end()) {
    return it->second;
  }
  if (released_.count(id) != 0) {
    return nullptr;
  }
  auto context = std::make_shared<ContextState>(id);
  contexts_[id] = context;
  return context;
}

std::set<std::int64_t> Registry::release(std::int64_t id) {
  std::shared_ptr<ContextState> context;
  {
    std::lock_guard lock(mutex_);
    const auto it = contexts_.find(id);
    if (it == contexts_.end()) {
      return {};
    }
    context = std::move(it->second);
    contexts_.erase(it);
    if (released_.insert(id).second) {
      released_order_.push_back(id);
      if (released_order_.size() > kReleasedKept) {
        released_.erase(released_order_.front());
        released_order_.pop_front();
      }
    }
  }
  return context->peers();
}

std::int64_t Registry::next_message() {
  const std::int64_t node_bits = node() << 48;
  std::lock_guard lock(mutex_);
  return node_bits | (next_message_++ & kCounterMask);
}

std::size_t Registry::live() const {
  std::lock_guard lock(mutex_);
  return contexts_.size();
}

// ---- the current context ----

std::shared_ptr<ContextState> current() {
  if (t_context) {
    return t_context;
  }
  if (auto& served = ditask::detail::served_call_state()) {
    return std::static_pointer_cast<ContextState>(served);
  }
  return nullptr;
}

void set_thread_context(std::shared_ptr<ContextState> context) { t_context = std::move(context); }

void propagate_contexts_with_calls() {
  static std::once_flag once;
  std::call_once(once, [] {
    ditask::detail::CallContextHooks hooks;
    hooks.capture = [](std::int64_t to) -> std::vector<std::uint8_t> {
      const auto context = current();
      if (!context) {
        return {};
      }
      context->add_peer(to);
      std::vector<std::uint8_t> bytes(8);
      const auto id = static_cast<std::uint64_t>(context->id());
      for (int i = 0; i < 8; ++i) {
        bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(id >> (8 * i));
      }
      return bytes;
    };
    hooks.restore = [](std::span<const std::uint8_t> bytes, std::int64_t caller) {
      if (bytes.size() != 8) {
        return;
      }
      std::uint64_t id = 0;
      for (int i = 0; i < 8; ++i) {
        id |= static_cast<std::uint64_t>(bytes[static_cast<std::size_t>(i)]) << (8 * i);
      }
      // A late call of a context released here does not bring it back.
      if (auto context = Registry::get().join(static_cast<std::int64_t>(id))) {
        context->add_peer(caller);
        ditask::detail::served_call_state() = std::move(context);
      }
    };
    ditask::detail::set_call_context_hooks(std::move(hooks));
  });
}

}  // namespace ditask::dist_autograd::detail

namespace ditask::dist_autograd {

namespace detail {

void release_everywhere(std::int64_t id, std::int64_t from) noexcept {
  const auto peers = Registry::get().release(id);
  std::vector<Future<void>> told;
  for (const auto node : peers) {
    if (node == from || node == ditask::task().router().node_id()) {
      continue;
    }
    try {
      told.push_back(rpc().call_async<void>(Callee(node).within(std::chrono::seconds(30)), "dist_autograd.release", id));
    } catch (const std::exception& e) {
      DITASK_LOG(warn, "autograd") << "context " << id << " not released on node " << node << ": " << e.what();
    }
  }
  for (auto& f : told) {
    try {
      f.get();
    } catch (const std::exception& e) {
      // A worker that left has nothing left to release.
      DITASK_LOG(debug, "autograd") << "context " << id << ": " << e.what();
    }
  }
}

}  // namespace detail

Context::Context() {
  if (detail::current()) {
    throw Error("this thread has a distributed autograd context already (context " +
                    std::to_string(detail::current()->id()) + ")",
                "end it first: one context per thread at a time");
  }
  detail::define_remote_functions();
  state_ = detail::Registry::get().create();
  id_ = state_->id();
  detail::set_thread_context(state_);
}

Context::~Context() {
  detail::set_thread_context(nullptr);
  detail::release_everywhere(id_, -1);
}

at::Tensor Gradients::at(const at::Tensor& parameter) const {
  for (const auto& [p, g] : items_) {
    if (p.unsafeGetTensorImpl() == parameter.unsafeGetTensorImpl()) {
      return g;
    }
  }
  return {};
}

Gradients get_gradients(std::int64_t context_id) {
  const auto context = detail::Registry::get().find(context_id);
  if (!context) {
    throw Error("no distributed autograd context " + std::to_string(context_id) + " on this worker",
                "it was released, or this worker never took part in it");
  }
  return context->gradients();
}

std::int64_t current_context_id() noexcept {
  const auto context = detail::current();
  return context ? context->id() : -1;
}

std::size_t live_contexts() noexcept { return detail::Registry::get().live(); }

}  // namespace ditask::dist_autograd
