// SPDX-License-Identifier: MIT
// The call context a library sends with remote calls (CallContextHooks, rpc_wire.hpp): captured
// on the calling thread as a call begins, restored on the serving thread before its arguments
// convert.
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "rpc_engine.hpp"

namespace ditask::detail {

namespace {

std::atomic<const CallContextHooks*> g_hooks{nullptr};  // read on every call: no lock
std::mutex g_set_mutex;
// Every set of hooks stays allocated (a thread may still be in one that was replaced); a library
// sets them once, as it loads.
std::vector<std::unique_ptr<const CallContextHooks>>& all_hooks() {
  static std::vector<std::unique_ptr<const CallContextHooks>> kept;
  return kept;
}

}  // namespace

void set_call_context_hooks(CallContextHooks hooks) {
  const std::lock_guard lock(g_set_mutex);
  all_hooks().push_back(std::make_unique<const CallContextHooks>(std::move(hooks)));
  g_hooks.store(all_hooks().back().get(), std::memory_order_release);
}

bool call_context_hooks() noexcept { return g_hooks.load(std::memory_order_acquire) != nullptr; }

std::vector<std::uint8_t> capture_call_context(std::int64_t to) {
  const auto* hooks = g_hooks.load(std::memory_order_acquire);
  if (hooks == nullptr || !hooks->capture) {
    return {};
  }
  return hooks->capture(to);
}

void restore_call_context(const std::vector<std::uint8_t>& context, std::int64_t caller) {
  if (context.empty()) {
    return;
  }
  const auto* hooks = g_hooks.load(std::memory_order_acquire);
  if (hooks != nullptr && hooks->restore) {
    hooks->restore(context, caller);
  }
}

}  // namespace ditask::detail
