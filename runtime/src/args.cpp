// SPDX-License-Identifier: MIT
// What a worker is given: the module's arguments and the environment contract.
#include <charconv>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "ditask/error.hpp"
#include "ditask/module.hpp"
#include "ditask/runtime/worker.hpp"
#include "internal_access.hpp"

namespace ditask {
namespace {

constexpr const char* kByLauncherHint =
    "worker mode is started by the ditask launcher, never by hand: run "
    "'ditask --package <module> --main <entry>' instead";

std::vector<std::string>& args_storage() {
  static std::vector<std::string> args;
  return args;
}

using Env = std::map<std::string, std::string>;

std::optional<std::string> lookup(const Env& env, const std::string& key) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second;
}

std::string required(const Env& env, const std::string& key) {
  auto value = lookup(env, key);
  if (!value) {
    throw Error(key + " is not set", kByLauncherHint);
  }
  return *value;
}

std::int64_t to_integer(const std::string& key, const std::string& value, std::int64_t min) {
  std::int64_t result = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, result);
  if (ec != std::errc() || ptr != end || result < min) {
    throw Error(
        "invalid " + key + "='" + value + "': expected an integer >= " + std::to_string(min),
        kByLauncherHint);
  }
  return result;
}

std::int64_t optional_integer(const Env& env, const std::string& key, std::int64_t fallback,
                              std::int64_t min) {
  auto value = lookup(env, key);
  return value ? to_integer(key, *value, min) : fallback;
}

// "a, b,,c" -> {"a", "b", "c"}: spaces around items and empty items are dropped.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    if (first != std::string::npos) {
      items.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
    }
  }
  return items;
}

// DITASK_PLAN holds the JSON object itself, or (not starting with '{') the path of a file
// holding it, for plans too big for the environment.
nlohmann::json parse_plan(const std::string& value) {
  const auto first = value.find_first_not_of(" \t\r\n");
  std::string text = value;
  if (first != std::string::npos && value[first] != '{' && value[first] != '[') {
    std::ifstream in(value);
    if (!in) {
      throw Error("cannot read the DITASK_PLAN file '" + value + "'", kByLauncherHint);
    }
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  nlohmann::json plan;
  try {
    plan = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("invalid DITASK_PLAN: ") + e.what(), kByLauncherHint);
  }
  if (!plan.is_object()) {
    throw Error("invalid DITASK_PLAN: expected a JSON object", kByLauncherHint);
  }
  return plan;
}

}  // namespace

const std::vector<std::string>& args() { return args_storage(); }

void detail::set_args(std::vector<std::string> args) { args_storage() = std::move(args); }

WorkerEnv parse_worker_env(const Env& env) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  WorkerEnv w;
  w.node_id = to_integer("DITASK_NODE_ID", required(env, "DITASK_NODE_ID"), 0);
  w.package = required(env, "DITASK_PACKAGE");
  w.main = required(env, "DITASK_MAIN");
  w.parallel_workers = optional_integer(env, "DITASK_PARALLEL_WORKERS", 1, 1);
  w.local_id = optional_integer(env, "DITASK_LOCAL_ID", 0, 0);
  if (w.local_id >= w.parallel_workers) {
    throw Error(
        "invalid DITASK_LOCAL_ID='" + std::to_string(w.local_id) +
            "': expected less than DITASK_PARALLEL_WORKERS=" + std::to_string(w.parallel_workers),
        kByLauncherHint);
  }
  if (lookup(env, "DITASK_WORLD_SIZE")) {
    w.world_size = optional_integer(env, "DITASK_WORLD_SIZE", kMax, 1);
  }
  w.listen = lookup(env, "DITASK_LISTEN").value_or("");
  w.attach_to = split_list(lookup(env, "DITASK_ATTACH_TO").value_or(""));
  w.topology = lookup(env, "DITASK_TOPOLOGY").value_or("");
  const auto labels = split_list(lookup(env, "DITASK_LABELS").value_or(""));
  w.labels = std::set<std::string>(labels.begin(), labels.end());
  for (const auto& role : split_list(lookup(env, "DITASK_ROLES").value_or(""))) {
    w.roles.insert(role);
    w.labels.insert("role." + role);  // what emit_to_role and match_labels("role.*") match
  }
  w.run_id = lookup(env, "DITASK_RUN_ID").value_or("");
  w.attempt = optional_integer(env, "DITASK_ATTEMPT", 0, 0);
  for (const auto& node : split_list(lookup(env, "DITASK_FINISHED_NODES").value_or(""))) {
    w.finished_nodes.insert(to_integer("DITASK_FINISHED_NODES", node, 0));
  }
  if (auto level = lookup(env, "DITASK_LOG_LEVEL")) {
    try {
      w.log_level = log::parse_level(*level);
    } catch (const Error& e) {
      throw Error("invalid DITASK_LOG_LEVEL='" + *level + "'", e.hint());
    }
  }
  if (auto plan = lookup(env, "DITASK_PLAN")) {
    w.plan = parse_plan(*plan);
  }
  return w;
}

}  // namespace ditask
