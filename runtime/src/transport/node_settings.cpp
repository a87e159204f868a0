// SPDX-License-Identifier: MIT
#include "node_settings.hpp"

#include <cmath>
#include <cstdio>

namespace ditask::detail {
namespace {

using json = nlohmann::json;

std::size_t bytes_of(const json& limits, const char* key, std::size_t fallback) {
  if (!limits.contains(key)) {
    return fallback;
  }
  const auto& v = limits.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0) {
    bad_plan(std::string("mesh.") + key, "must be a positive integer");
  }
  return static_cast<std::size_t>(v.get<std::uint64_t>());
}

}  // namespace

void bad_plan(const std::string& key, const std::string& why) {
  throw Error("DITASK_PLAN: '" + key + "' " + why, "worker mode is started by the ditask launcher");
}

std::chrono::milliseconds plan_seconds(const json& limits, const char* key, std::chrono::milliseconds fallback) {
  if (!limits.contains(key)) {
    return fallback;
  }
  const auto& v = limits.at(key);
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
    bad_plan(std::string("mesh.") + key, "must be a positive number of seconds");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(v.get<double>() * 1000)));
}

NodeSettings node_settings(const WorkerEnv& env) {
  NodeSettings s;
  s.node_id = env.node_id;
  s.local_id = env.local_id;
  s.attempt = env.attempt;
  s.finished_nodes = env.finished_nodes;
  s.run_id = env.run_id;
  s.labels = env.labels;
  s.world_size = env.world_size;
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
    // The limits are under "mesh" in the plan (the launcher's option group): every transport obeys them.
    const json limits = plan.value("mesh", json::object());
    if (!limits.is_object()) {
      bad_plan("mesh", "must be an object");
    }
    s.startup_timeout = plan_seconds(limits, "startup_timeout_s", s.startup_timeout);
    s.send_timeout = plan_seconds(limits, "send_timeout_s", s.send_timeout);
    s.max_frame_bytes = bytes_of(limits, "max_frame_bytes", s.max_frame_bytes);
    s.send_queue_bytes = bytes_of(limits, "send_queue_bytes", s.send_queue_bytes);
    const std::string policy = limits.value("send_policy", std::string("wait"));
    if (policy != "wait" && policy != "drop") {
      bad_plan("mesh.send_policy", "must be 'wait' or 'drop', not '" + policy + "'");
    }
    s.drop_when_full = policy == "drop";
  } catch (const json::exception& e) {
    bad_plan("nodes/hosts/mesh", std::string("is malformed: ") + e.what());
  }
  return s;
}

Error not_a_peer(const NodeSettings& s, std::int64_t node, std::string hint) {
  if (s.finished_nodes.count(node) != 0) {
    return Error("node " + std::to_string(node) + " finished (exited 0) before node " + std::to_string(s.node_id) +
                     " started: it is not restarted",
                 std::move(hint));
  }
  return Error("node " + std::to_string(node) + " is not a peer of node " + std::to_string(s.node_id), std::move(hint));
}

std::optional<std::int64_t> world_beyond_local(const NodeSettings& s) {
  if (!s.world_size || *s.world_size <= static_cast<std::int64_t>(s.local_nodes.size())) {
    return std::nullopt;
  }
  return *s.world_size - static_cast<std::int64_t>(s.finished_nodes.size());
}

std::string printable(std::string_view text, std::size_t max) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char ch : text.substr(0, max)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      out += {'\\', 'x', kDigits[c >> 4], kDigits[c & 0x0f]};
    } else {
      out += ch;
    }
  }
  return text.size() > max ? out + "..." : out;
}

std::string seconds_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

}  // namespace ditask::detail
