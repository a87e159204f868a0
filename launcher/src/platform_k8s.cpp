// SPDX-License-Identifier: MIT
// --platform k8s: DI-orchestrator's DIJob pods (DI_NODES, DI_RANK), or the pods of a Kubernetes
// Indexed Job (JOB_COMPLETION_INDEX) without any operator (launchers.md §2.4, diengine.md §5.2).
#include <algorithm>
#include <cctype>
#include <charconv>

#include "ditask/error.hpp"
#include "ditask/runtime/suggest.hpp"
#include "platform.hpp"

namespace ditask::launcher {
namespace {

constexpr const char* kK8sHint =
    "run in a DIJob pod (DI_NODES, DI_RANK) or an Indexed Job pod (JOB_COMPLETION_INDEX, with "
    "--world-size and --host-pattern)";

std::int64_t to_index(const std::string& name, const std::string& value) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v < 0) {
    throw Error("--platform k8s: " + name + "='" + value + "' is not a non-negative integer", kK8sHint);
  }
  return v;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = std::min(text.find(',', at), text.size());
    std::string item = text.substr(at, comma - at);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) {
      out.push_back(item);
    }
    at = comma + 1;
  }
  return out;
}

/// DI_JOB_ID ("namespace/name") as a run id shared by every pod of the DIJob.
std::string run_id_of(const std::string& job) {
  std::string out = "k8s-";
  for (char c : job) {
    out += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-' ? c : '.';
  }
  return out.substr(0, 128);
}

}  // namespace

PlatformLayout k8s_layout(const Env& env, std::int64_t pods, const std::string& host_pattern) {
  PlatformLayout l;
  l.name = "k8s";
  l.default_port = 50515;  // DI-engine's k8s parser: the same ports on every pod
  auto& vars = l.variables;
  const auto get = [&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) {
      return std::nullopt;
    }
    vars[name] = it->second;
    return it->second;
  };
  if (auto nodes = get("DI_NODES")) {
    l.flavour = "di-orchestrator";
    l.placement = "DI_NODES[DI_RANK]";
    const auto hosts = split_commas(*nodes);
    const auto rank = get("DI_RANK");
    if (!rank) {
      throw Error("--platform k8s: DI_NODES is set but DI_RANK is not", kK8sHint);
    }
    l.rank = to_index("DI_RANK", *rank);
    if (hosts.empty()) {
      throw Error("--platform k8s: DI_NODES='" + *nodes + "' lists no pod", kK8sHint);
    }
    if (l.rank >= static_cast<std::int64_t>(hosts.size())) {
      throw Error("--platform k8s: DI_RANK=" + *rank + " is outside DI_NODES, which lists " +
                      std::to_string(hosts.size()) + " pods",
                  "a pod that DI-orchestrator re-created gets a new rank past DI_NODES: restart the DIJob, or "
                  "give this pod its place with --platform-spec");
    }
    for (const auto& host : hosts) {
      l.tasks.push_back({host, 0});
    }
    if (auto job = get("DI_JOB_ID")) {
      l.run_id = run_id_of(*job);
    }
    for (const auto& [key, value] : env) {  // DI_<TASK>_NODES: shown, as DI-engine reads none of them
      if (key.size() > 9 && key.rfind("DI_", 0) == 0 && key.substr(key.size() - 6) == "_NODES" && key != "DI_NODES") {
        vars[key] = value;
      }
    }
    l.task_count = static_cast<std::int64_t>(l.tasks.size());
    l.auto_rendezvous = "tcp://" + l.tasks.front().host + ":22270";  // DI-orchestrator's di-port
    l.serves_rendezvous = l.rank == 0;
    return l;
  }
  if (auto index = get("JOB_COMPLETION_INDEX")) {
    l.flavour = "indexed job";
    l.placement = "--host-pattern with {index}";
    l.rank = to_index("JOB_COMPLETION_INDEX", *index);
    if (pods < 1) {
      throw Error("--platform k8s: an Indexed Job needs --world-size (workers in the whole job) to know its pods",
                  "give --world-size (pods x --parallel-workers)");
    }
    if (host_pattern.find("{index}") == std::string::npos) {
      throw Error("--platform k8s: an Indexed Job needs --host-pattern with {index}, e.g. myjob-{index}.myjob-svc",
                  "pods of an Indexed Job are named <job>-<index>; with a headless Service as subdomain they "
                  "resolve as <job>-<index>.<service>");
    }
    if (l.rank >= pods) {
      throw Error("--platform k8s: JOB_COMPLETION_INDEX=" + *index + " is not below the " + std::to_string(pods) +
                      " pods that --world-size gives",
                  "give --world-size as pods x --parallel-workers");
    }
    for (std::int64_t i = 0; i < pods; ++i) {
      std::string host = host_pattern;
      for (auto at = host.find("{index}"); at != std::string::npos; at = host.find("{index}")) {
        host.replace(at, 7, std::to_string(i));
      }
      l.tasks.push_back({host, 0});
    }
    l.task_count = pods;
    l.auto_rendezvous = "tcp://" + l.tasks.front().host + ":22270";
    l.serves_rendezvous = l.rank == 0;
    return l;
  }
  throw Error("--platform k8s: neither DI_NODES and DI_RANK (DI-orchestrator) nor JOB_COMPLETION_INDEX "
              "(an Indexed Job) is set",
              kK8sHint);
}

}  // namespace ditask::launcher
