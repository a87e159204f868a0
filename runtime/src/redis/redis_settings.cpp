// SPDX-License-Identifier: MIT
#include "redis_settings.hpp"

#include "ditask/error.hpp"

namespace ditask::detail::redis {

std::optional<RedisSettings> redis_settings(const WorkerEnv& env) {
  const auto& plan = env.plan;
  if (!plan.contains("mq") || !plan["mq"].is_object() || plan["mq"].value("type", std::string()) != "redis") {
    return std::nullopt;
  }
  const auto& mq = plan["mq"];
  RedisSettings s;
  try {
    s.host = mq.value("host", s.host);
    s.port = mq.value("port", s.port);
    s.user = mq.value("user", std::string());
    s.password = mq.value("password", std::string());
    s.db = mq.value("db", 0);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("DITASK_PLAN: 'mq' is malformed: ") + e.what(), "worker mode is started by the ditask launcher");
  }
  if (s.host.empty() || s.port < 1 || s.port > 65535 || s.db < 0) {
    throw Error("DITASK_PLAN: 'mq' names no Redis server (host '" + s.host + "', port " + std::to_string(s.port) + ")",
                "worker mode is started by the ditask launcher");
  }
  s.scope = "ditask:" + env.run_id;
  return s;
}

}  // namespace ditask::detail::redis
