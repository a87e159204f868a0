// SPDX-License-Identifier: MIT
// The Redis transport as a Transport, without the Asio and hiredis headers (make_transport
// includes this).
#pragma once

#include <memory>

#include "../mesh/settings.hpp"
#include "../transport/transport.hpp"
#include "redis_settings.hpp"

namespace ditask::detail::redis {

/// A started Redis transport for the node `common` describes. Errors: ditask::Error when it
/// cannot start (the connection itself is retried until wait_ready gives up).
std::shared_ptr<Transport> make_redis(const mesh::MeshSettings& common, const RedisSettings& server);

}  // namespace ditask::detail::redis
