// SPDX-License-Identifier: MIT
// The option values a platform layout gives (levels 4 and 5 of the precedence chain).
#include <algorithm>
#include <charconv>

#include "ditask/error.hpp"
#include "ditask/runtime/suggest.hpp"
#include "platform.hpp"

namespace ditask::launcher {
namespace {

std::optional<std::int64_t> integer_of(const std::string& text) {
  std::int64_t v = 0;
  const auto first = text.substr(0, text.find(','));
  auto [end, ec] = std::from_chars(first.data(), first.data() + first.size(), v);
  return ec == std::errc() && end == first.data() + first.size() ? std::optional(v) : std::nullopt;
}

std::string spec_text(const std::string& key, const nlohmann::json& value) {
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_number() || value.is_boolean()) {
    return value.dump();
  }
  if (value.is_array()) {
    std::vector<std::string> items;
    for (const auto& item : value) {
      items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    }
    return join(items, ",");
  }
  throw Error("--platform-spec: task key '" + key + "' has a value of unsupported type: " + value.dump());
}

/// The option values of one spec task, keys as option names. Errors: an unknown key.
RawValues spec_task(const nlohmann::json& spec, std::int64_t rank) {
  RawValues out;
  if (!spec.is_object() || !spec.contains("tasks") || spec["tasks"].size() <= static_cast<std::size_t>(rank)) {
    return out;
  }
  const auto& task = spec["tasks"][static_cast<std::size_t>(rank)];
  if (!task.is_object()) {
    throw Error("--platform-spec: tasks[" + std::to_string(rank) + "] is not an object");
  }
  std::vector<std::string> names;
  for (const auto& s : option_specs()) {
    names.push_back(s.name);
  }
  for (const auto& [key, value] : task.items()) {
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', '-');
    if (name == "local-rank") {
      name = "local_rank";
    }
    if (std::find(names.begin(), names.end(), name) == names.end() || name == "platform" || name == "platform-spec") {
      const auto guess = closest_match(name, names);
      throw Error("--platform-spec: tasks[" + std::to_string(rank) + "] has the unknown key '" + key + "'",
                  guess ? "did you mean '" + *guess + "'?" : "keys are option names of ditask --help");
    }
    out[name] = spec_text(key, value);
  }
  return out;
}

std::string value_or(const RawValues& a, const RawValues& b, const std::string& key, const std::string& fallback) {
  if (auto it = a.find(key); it != a.end()) {
    return it->second;
  }
  if (auto it = b.find(key); it != b.end()) {
    return it->second;
  }
  return fallback;
}

}  // namespace

PlatformValues platform_values(const PlatformLayout& layout, const RawValues& chosen, const nlohmann::json& spec) {
  PlatformValues v;
  v.spec = spec_task(spec, layout.rank);
  const auto pw = integer_of(value_or(chosen, v.spec, "parallel-workers", "1")).value_or(1);
  const std::string topology = value_or(chosen, v.spec, "topology", "mesh");
  const bool rendezvous = !value_or(chosen, v.spec, "rendezvous", "").empty();
  const auto base_port = integer_of(value_or(chosen, {}, "ports", "")).value_or(layout.default_port);
  // Each task's first node id, host and first port: its --platform-spec entry, else the formula.
  struct Peer {
    std::int64_t first_node = 0;
    std::string host;
    std::int64_t first_port = 0;
  };
  std::vector<Peer> peers;
  for (std::int64_t q = 0; q < layout.task_count; ++q) {
    const auto task = q == layout.rank ? v.spec : spec_task(spec, q);
    const auto& place = layout.tasks.at(static_cast<std::size_t>(q));
    Peer p;
    p.first_node = integer_of(value_or(task, {}, "node-ids", "")).value_or(q * pw);
    p.host = value_or(task, {}, "address", place.host);
    p.first_port = integer_of(value_or(task, {}, "ports", "")).value_or(base_port + place.local_id * pw);
    peers.push_back(std::move(p));
  }
  // $node.N in the spec's attach_to: the first address of the task whose first node id is N.
  if (auto it = v.spec.find("attach-to"); it != v.spec.end()) {
    std::vector<std::string> items;
    std::size_t at = 0;
    const std::string& text = it->second;
    while (at <= text.size()) {
      const auto comma = std::min(text.find(',', at), text.size());
      std::string item = text.substr(at, comma - at);
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (item.rfind("$node.", 0) == 0) {
        const auto id = integer_of(item.substr(6));
        const auto peer = std::find_if(peers.begin(), peers.end(), [&](const Peer& p) { return id && p.first_node == *id; });
        if (peer == peers.end()) {
          throw Error("--platform-spec: '" + item + "' names no task's first node id",
                      "$node.N refers to the task whose node_ids is N (a task's other workers have no $node name)");
        }
        item = "tcp://" + peer->host + ":" + std::to_string(peer->first_port);
      }
      if (!item.empty()) {
        items.push_back(item);
      }
      at = comma + 1;
    }
    it->second = join(items, ",");
  }
  const auto& me = peers.at(static_cast<std::size_t>(layout.rank));
  v.env["node-ids"] = std::to_string(me.first_node);
  if (!me.host.empty()) {
    v.env["address"] = me.host;
  }
  if (!rendezvous) {
    v.env["ports"] = std::to_string(me.first_port);
  }
  v.env["world-size"] = std::to_string(layout.task_count * pw);
  if (!layout.run_id.empty()) {
    v.env["run-id"] = layout.run_id;
  }
  std::vector<std::string> attach;
  if (!rendezvous && topology != "alone") {
    const std::int64_t last = topology == "mesh" ? layout.rank : std::min<std::int64_t>(layout.rank, 1);
    for (std::int64_t q = 0; q < last; ++q) {
      for (std::int64_t i = 0; i < pw; ++i) {
        const auto& p = peers[static_cast<std::size_t>(q)];
        attach.push_back("tcp://" + p.host + ":" + std::to_string(p.first_port + i));
      }
    }
  }
  if (!attach.empty()) {
    v.env["attach-to"] = join(attach, ",");
  }
  nlohmann::json hosts = nlohmann::json::array();
  for (const auto& p : peers) {
    hosts.push_back(p.host);
  }
  v.info = {{"name", layout.name},       {"read", layout.flavour}, {"rank", layout.rank},
            {"tasks", layout.task_count}, {"placement", rendezvous ? std::string("rendezvous") : layout.placement},
            {"hosts", hosts},            {"master_addr", peers.empty() ? std::string() : peers[0].host},
            {"auto_rendezvous", layout.auto_rendezvous}, {"serves_rendezvous", layout.serves_rendezvous},
            {"variables", layout.variables}};
  return v;
}

}  // namespace ditask::launcher
