// SPDX-License-Identifier: MIT
#include "settings.hpp"

#include <charconv>
#include <cmath>
#include <string_view>

#include "address.hpp"
#include "ditask/error.hpp"

namespace ditask::detail::mesh {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad_plan(const std::string& key, const std::string& why) {
  throw Error("DITASK_PLAN: '" + key + "' " + why, "worker mode is started by the ditask launcher");
}

std::chrono::milliseconds seconds_of(const json& mesh, const char* key, std::chrono::milliseconds fallback) {
  if (!mesh.contains(key)) {
    return fallback;
  }
  const auto& v = mesh.at(key);
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
    bad_plan(std::string("mesh.") + key, "must be a positive number of seconds");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(v.get<double>() * 1000)));
}

std::size_t bytes_of(const json& mesh, const char* key, std::size_t fallback) {
  if (!mesh.contains(key)) {
    return fallback;
  }
  const auto& v = mesh.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0) {
    bad_plan(std::string("mesh.") + key, "must be a positive integer");
  }
  return static_cast<std::size_t>(v.get<std::uint64_t>());
}

}  // namespace

MeshSettings mesh_settings(const WorkerEnv& env, const char* token_env, const char* listen_fd_env) {
  MeshSettings s;
  s.node_id = env.node_id;
  s.local_id = env.local_id;
  s.attempt = env.attempt;
  s.finished_nodes = env.finished_nodes;
  s.run_id = env.run_id;
  s.labels = env.labels;
  s.listen = env.listen;
  s.dial = env.attach_to;
  if (!env.topology.empty()) {
    s.topology = env.topology;
  }
  s.world_size = env.world_size;
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
  const json& plan = env.plan;
  try {
    s.run_id_explicit = plan.value("run_id_explicit", false);
    if (plan.contains("nodes")) {
      for (const auto& n : plan.at("nodes")) {
        s.local_nodes.push_back(LocalNode{n.at("node_id").get<std::int64_t>(),
                                          n.at("local_id").get<std::int64_t>(),
                                          n.at("listen").get<std::string>()});
      }
    }
    if (plan.contains("hosts")) {
      s.hosts = plan.at("hosts").get<std::map<std::string, std::string>>();
    }
    const json mesh = plan.value("mesh", json::object());
    if (!mesh.is_object()) {
      bad_plan("mesh", "must be an object");
    }
    s.startup_timeout = seconds_of(mesh, "startup_timeout_s", s.startup_timeout);
    s.hello_timeout = seconds_of(mesh, "hello_timeout_s", s.hello_timeout);
    s.send_timeout = seconds_of(mesh, "send_timeout_s", s.send_timeout);
    s.max_frame_bytes = bytes_of(mesh, "max_frame_bytes", s.max_frame_bytes);
    s.send_queue_bytes = bytes_of(mesh, "send_queue_bytes", s.send_queue_bytes);
    const std::string policy = mesh.value("send_policy", std::string("wait"));
    if (policy != "wait" && policy != "drop") {
      bad_plan("mesh.send_policy", "must be 'wait' or 'drop', not '" + policy + "'");
    }
    s.drop_when_full = policy == "drop";
    s.relay = mesh.value("relay", false);
    s.token = mesh.value("token", std::string());
  } catch (const json::exception& e) {
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

Error not_a_peer(const MeshSettings& s, std::int64_t node, std::string hint) {
  if (s.finished_nodes.count(node) != 0) {
    return Error("node " + std::to_string(node) + " finished (exited 0) before node " + std::to_string(s.node_id) +
                     " started: it is not restarted",
                 std::move(hint));
  }
  return Error("node " + std::to_string(node) + " is not a peer of node " + std::to_string(s.node_id), std::move(hint));
}

std::optional<std::int64_t> world_beyond_local(const MeshSettings& s) {
  if (!s.world_size || *s.world_size <= static_cast<std::int64_t>(s.local_nodes.size())) {
    return std::nullopt;
  }
  return *s.world_size - static_cast<std::int64_t>(s.finished_nodes.size());
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
