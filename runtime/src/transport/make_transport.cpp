// SPDX-License-Identifier: MIT
#include "make_transport.hpp"

#include <array>
#include <mutex>
#include <optional>

#include "../mesh/make_mesh.hpp"
#include "../redis/make_redis.hpp"

namespace ditask::detail {

namespace {
std::mutex g_worker_mutex;
std::optional<TransportPlan> g_worker_plan;   // guarded by g_worker_mutex
std::shared_ptr<Transport> g_worker_transport;  // guarded by g_worker_mutex

// The one table: a third transport adds a line here and a make_<name>.hpp beside it.
const std::array<TransportKind, 3> kKinds{{
    {"tcp", &mesh::mesh_starter},
    {"ipc", &mesh::mesh_starter},
    {"redis", &redis::redis_starter},
}};
}  // namespace

std::span<const TransportKind> transport_kinds() { return kKinds; }

std::string scheme_of(const std::string& address) {
  const auto colon = address.find("://");
  return colon == std::string::npos ? "tcp" : address.substr(0, colon);
}

std::string transport_scheme(const WorkerEnv& env) {
  const auto& plan = env.plan;
  if (plan.is_object() && plan.contains("mq") && plan["mq"].is_object() &&
      plan["mq"].value("type", std::string()) == "redis") {
    return "redis";
  }
  return scheme_of(env.listen);
}

TransportPlan transport_plan(const WorkerEnv& env) {
  TransportPlan plan;
  plan.scheme = transport_scheme(env);
  plan.node = node_settings(env);
  std::string known;
  for (const auto& kind : kKinds) {
    if (kind.scheme == plan.scheme) {
      plan.start = kind.plan(env);
      return plan;
    }
    if (!known.empty()) {
      known += ", ";
    }
    known += std::string(kind.scheme) + "://";
  }
  throw Error("no transport for addresses of the form '" + plan.scheme + "://'", "this runtime has " + known);
}

std::shared_ptr<Transport> make_transport(const TransportPlan& plan) { return plan.start(plan.node); }

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

TransportStats shutdown_worker_transport(bool failed) noexcept {
  std::shared_ptr<Transport> transport;
  {
    std::lock_guard lock(g_worker_mutex);
    transport = std::move(g_worker_transport);
    g_worker_plan.reset();
  }
  if (!transport) {
    return {};
  }
  transport->shutdown(failed);
  return transport->stats();  // after the shutdown: what it lost on the way out counts too
}

}  // namespace ditask::detail
