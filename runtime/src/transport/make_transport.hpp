// SPDX-License-Identifier: MIT
// Choosing a worker's transport from its plan (worker mode) and creating it.
#pragma once

#include <memory>

#include <optional>

#include "../mesh/settings.hpp"
#include "../redis/redis_settings.hpp"
#include "transport.hpp"

namespace ditask::detail {

/// Which transport a worker uses, with its settings (read from the launcher's plan).
struct TransportPlan {
  mesh::MeshSettings mesh;  ///< the node and its limits; the mesh's addresses
  std::optional<redis::RedisSettings> redis;  ///< set: --mq-type redis (the mesh's addresses are unused)
};

/// Creates and starts the transport `plan` names. Errors: ditask::Error when it cannot start
/// (e.g. its listening address is taken).
std::shared_ptr<Transport> make_transport(const TransportPlan& plan);

/// Worker mode: the plan worker_transport(true) uses. Thread: any; before the entry runs.
void set_worker_transport_plan(TransportPlan plan);
/// Whether this process is a ditask worker (it has a transport plan, or a transport).
bool in_worker_mode();

}  // namespace ditask::detail
