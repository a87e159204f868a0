// SPDX-License-Identifier: MIT
#include "settings.hpp"

#include <charconv>
#include <string_view>

#include "address.hpp"
#include "ditask/error.hpp"

namespace ditask::detail::mesh {
MeshSettings mesh_settings(const WorkerEnv& env, const char* token_env, const char* listen_fd_env) {
  MeshSettings s;
  static_cast<NodeSettings&>(s) = node_settings(env);
  s.listen = env.listen;
  s.dial = env.attach_to;
  if (!env.topology.empty()) {
    s.topology = env.topology;
  }
  if (listen_fd_env != nullptr && *listen_fd_env != '\0') {
    const std::string_view text(listen_fd_env);
    int fd = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), fd);
    if (ec != std::errc() || end != text.data() + text.size() || fd < 0) {
      throw Error("DITASK_LISTEN_FD='" + std::string(text) + "' is not a file descriptor",
                  "worker mode is started by the ditask launcher");
    }
    s.listen_fd = fd;
  }
  const nlohmann::json& plan = env.plan;
  try {
    if (plan.contains("hosts")) {
      s.hosts = plan.at("hosts").get<std::map<std::string, std::string>>();
    }
    const nlohmann::json mesh = plan.value("mesh", nlohmann::json::object());  // node_settings() checked it is an object
    s.hello_timeout = plan_seconds(mesh, "hello_timeout_s", s.hello_timeout);
    s.relay = mesh.value("relay", false);
    s.token = mesh.value("token", std::string());
  } catch (const nlohmann::json::exception& e) {
    bad_plan("nodes/hosts/mesh", std::string("is malformed: ") + e.what());
  }
  if (s.token.empty() && token_env != nullptr) {
    s.token = token_env;
  }
  if (!s.listen.empty()) {
    parse_address(s.listen);  // a clear error now rather than at bind time
  }
  for (const auto& d : s.dial) {
    parse_address(d);
  }
  return s;
}

std::vector<LocalNode> expected_inbound(const MeshSettings& s) {
  std::vector<LocalNode> out;
  for (const auto& n : s.local_nodes) {
    if (n.node_id == s.node_id || s.finished_nodes.count(n.node_id) != 0) {
      continue;
    }
    if ((s.topology == "mesh" && n.local_id > s.local_id) ||
        (s.topology == "star" && s.local_id == 0 && n.local_id != 0)) {
      out.push_back(n);
    }
  }
  return out;
}

}  // namespace ditask::detail::mesh
