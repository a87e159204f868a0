// SPDX-License-Identifier: MIT
#include "make_transport.hpp"

#include <mutex>
#include <optional>

#include "../mesh/make_mesh.hpp"
#include "../redis/make_redis.hpp"

namespace ditask::detail {

namespace {
std::mutex g_worker_mutex;
std::optional<TransportPlan> g_worker_plan;   // guarded by g_worker_mutex
std::shared_ptr<Transport> g_worker_transport;  // guarded by g_worker_mutex
}  // namespace

std::shared_ptr<Transport> make_transport(const TransportPlan& plan) {
  if (plan.redis) {
    return redis::make_redis(plan.mesh, *plan.redis);
  }
  return mesh::make_mesh(plan.mesh);
}

void set_worker_transport_plan(TransportPlan plan) {
  std::lock_guard lock(g_worker_mutex);
  g_worker_plan = std::move(plan);
}

bool in_worker_mode() {
  std::lock_guard lock(g_worker_mutex);
  return g_worker_plan.has_value() || g_worker_transport != nullptr;
}

std::shared_ptr<Transport> worker_transport(bool create) {
  std::lock_guard lock(g_worker_mutex);
  if (!g_worker_transport && create && g_worker_plan) {
    g_worker_transport = make_transport(*g_worker_plan);
  }
  return g_worker_transport;
}

void shutdown_worker_transport(bool failed) noexcept {
  std::shared_ptr<Transport> transport;
  {
    std::lock_guard lock(g_worker_mutex);
    transport = std::move(g_worker_transport);
    g_worker_plan.reset();
  }
  if (transport) {
    transport->shutdown(failed);
  }
}

}  // namespace ditask::detail
