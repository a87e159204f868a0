// SPDX-License-Identifier: MIT
// The distributed optimizer: one LibTorch optimizer on each worker that owns parameters (an
// OptimizerOwner, a remote object made there), stepping with the gradients a context holds
// there. docs/autograd.md "The distributed optimizer".
#include "ditask/torch/distributed_optimizer.hpp"

#include <map>
#include <mutex>

#include <ditask/ditask.hpp>

#include "contexts.hpp"
#include "optimizer_owner.hpp"

namespace ditask {

namespace {

std::mutex g_factories_mutex;
std::map<std::string, OptimizerFactory>& factories() {
  static std::map<std::string, OptimizerFactory> all;
  return all;
}

}  // namespace

void define_optimizer(const std::string& name, OptimizerFactory factory) {
  if (name.empty()) {
    throw Error("an optimizer needs a name", "e.g. define_optimizer(\"sgd\", ...)");
  }
  dist_autograd::detail::define_remote_functions();
  const std::lock_guard lock(g_factories_mutex);
  factories()[name] = std::move(factory);
}

namespace detail {

OptimizerOwner::OptimizerOwner(const std::string& factory, const std::vector<RRef<at::Tensor>>& parameters) {
  OptimizerFactory make;
  {
    const std::lock_guard lock(g_factories_mutex);
    const auto it = factories().find(factory);
    if (it == factories().end()) {
      std::string known;
      for (const auto& [name, f] : factories()) {
        known += (known.empty() ? "" : ", ") + name;
      }
      throw Error("no optimizer '" + factory + "' on node " + std::to_string(task().router().node_id()) +
                      (known.empty() ? std::string(" (none defined)") : " (defined: " + known + ")"),
                  "define it on every worker that owns parameters: define_optimizer(\"" + factory + "\", ...)");
    }
    make = it->second;
  }
  for (const auto& handle : parameters) {
    const auto local = handle.local_value();
    if (!local) {
      throw Error("node " + std::to_string(task().router().node_id()) + " does not own a parameter it was given (node " +
                  std::to_string(handle.owner()) + " does)");
    }
    parameters_.push_back(*local);
  }
  optimizer_ = make(parameters_);
  if (!optimizer_) {
    throw Error("optimizer '" + factory + "' made nothing on node " + std::to_string(task().router().node_id()));
  }
}

void OptimizerOwner::step(std::int64_t context_id) {
  const auto gradients = dist_autograd::get_gradients(context_id);
  const std::lock_guard lock(mutex_);
  // The optimizer reads .grad: the context's gradients stand in for it during the step only.
  std::vector<at::Tensor> saved;
  saved.reserve(parameters_.size());
  for (auto& p : parameters_) {
    saved.push_back(p.grad());
    p.mutable_grad() = gradients.at(p);
  }
  try {
    optimizer_->step();
  } catch (...) {
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      parameters_[i].mutable_grad() = saved[i];
    }
    throw;
  }
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    parameters_[i].mutable_grad() = saved[i];
  }
}

}  // namespace detail

struct DistributedOptimizer::Owners {
  std::map<std::int64_t, RRef<detail::OptimizerOwner>> by_node;
};

DistributedOptimizer::DistributedOptimizer(const std::string& optimizer, const std::vector<RRef<at::Tensor>>& parameters)
    : owners_(std::make_unique<Owners>()) {
  if (parameters.empty()) {
    throw Error("a distributed optimizer needs parameters", "pass parameter_rrefs(module) of each part of the model");
  }
  dist_autograd::detail::define_remote_functions();
  std::map<std::int64_t, std::vector<RRef<at::Tensor>>> grouped;
  for (const auto& p : parameters) {
    grouped[p.owner()].push_back(p);
  }
  std::vector<std::pair<std::int64_t, Future<RRef<detail::OptimizerOwner>>>> made;
  for (auto& [node, handles] : grouped) {
    made.emplace_back(node, rpc().remote_async<detail::OptimizerOwner>(node, optimizer, handles));
  }
  for (auto& [node, future] : made) {
    owners_->by_node[node] = future.get();
  }
}

DistributedOptimizer::~DistributedOptimizer() = default;

void DistributedOptimizer::step(std::int64_t context_id) {
  std::vector<Future<void>> steps;
  for (auto& [node, owner] : owners_->by_node) {
    steps.push_back(owner.call_async<void>("step", context_id));
  }
  wait_all(steps);
}

std::vector<std::int64_t> DistributedOptimizer::owners() const {
  std::vector<std::int64_t> out;
  for (const auto& [node, owner] : owners_->by_node) {
    out.push_back(node);
  }
  return out;
}

RRef<at::Tensor> parameter_rref(const at::Tensor& parameter) {
  dist_autograd::detail::define_remote_functions();
  return rpc().local_ref(std::make_shared<at::Tensor>(parameter));
}

std::vector<RRef<at::Tensor>> parameter_rrefs(const torch::nn::Module& module) {
  std::vector<RRef<at::Tensor>> out;
  for (const auto& p : module.parameters()) {
    out.push_back(parameter_rref(p));
  }
  return out;
}

}  // namespace ditask
