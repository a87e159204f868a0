// SPDX-License-Identifier: MIT
// The Redis transport as a Transport, without the Asio and hiredis headers (make_transport
// includes this).
#pragma once

#include <memory>

#include "../transport/make_transport.hpp"
#include "../transport/node_settings.hpp"
#include "../transport/transport.hpp"
#include "redis_settings.hpp"

namespace ditask::detail::redis {

/// A started Redis transport for the node `common` describes. Errors: ditask::Error when it
/// cannot start (the connection itself is retried until wait_ready gives up).
std::shared_ptr<Transport> make_redis(const NodeSettings& common, const RedisSettings& server);

/// The transport table's entry for redis://: reads DITASK_PLAN's "mq".
/// Errors: ditask::Error naming a malformed field.
TransportStarter redis_starter(const WorkerEnv& env);

}  // namespace ditask::detail::redis
