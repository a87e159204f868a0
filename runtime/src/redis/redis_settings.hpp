// SPDX-License-Identifier: MIT
// Where a worker's Redis is and how it logs in, read from DITASK_PLAN's "mq" object.
#pragma once

#include <optional>
#include <string>

#include "ditask/runtime/worker.hpp"

namespace ditask::detail::redis {

/// One Redis server and the login to it.
struct RedisSettings {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string user;      ///< empty: AUTH with the password alone (Redis before 6, or "default")
  std::string password;  ///< empty: no AUTH
  int db = 0;            ///< SELECT for the presence keys (channels are server-wide)
  std::string scope;     ///< what every channel and key of the run starts with: "ditask:<run id>"

  /// "host:port", for messages.
  std::string where() const { return host + ":" + std::to_string(port); }
};

/// The settings when the plan's "mq" says type "redis", else nullopt.
/// Errors: ditask::Error naming a malformed field.
std::optional<RedisSettings> redis_settings(const WorkerEnv& env);

}  // namespace ditask::detail::redis
