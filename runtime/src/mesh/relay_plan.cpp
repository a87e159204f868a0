// SPDX-License-Identifier: MIT
#include "relay_plan.hpp"

namespace ditask::detail::mesh {

RelayPlan::RelayPlan(const MeshSettings& settings)
    : star_(settings.topology == "star"),
      relay_(settings.relay),
      node_id_(settings.node_id),
      local_id_(settings.local_id) {
  for (const auto& n : settings.local_nodes) {
    if (n.local_id == 0) {
      hub_ = n.node_id;
    }
    job_.insert(n.node_id);
  }
}

std::optional<std::int64_t> RelayPlan::hub_for(std::int64_t node, bool direct) const {
  if (!relay_ || !star_ || is_hub() || node == node_id_ || direct || job_.count(node) == 0) {
    return std::nullopt;
  }
  return hub_;
}

std::string RelayPlan::unreachable_hint(std::int64_t node) const {
  if (!star_ || is_hub()) {
    return "";
  }
  if (job_.count(node) == 0) {
    return "node " + std::to_string(node) +
           " is a worker of another launcher, and a hub relays only among its own launcher's workers: dial it with "
           "--attach-to";
  }
  return relay_ ? "" : "spokes of a star reach each other only through a relaying hub (--relay)";
}

}  // namespace ditask::detail::mesh
