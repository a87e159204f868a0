// SPDX-License-Identifier: MIT
#include "ditask/launcher/plan.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>

#include "ditask/error.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask::launcher {
namespace {

/// DI-engine's padding_param: one value is a base (base+i), n values are used as they are.
std::int64_t padded(const std::vector<std::int64_t>& given, std::int64_t start, std::size_t i) {
  if (given.empty()) {
    return start + static_cast<std::int64_t>(i);
  }
  if (given.size() == 1) {
    return given[0] + static_cast<std::int64_t>(i);
  }
  return given[i];
}

std::string host_of(const std::string& url) {
  if (url.rfind("tcp://", 0) != 0) {
    return "127.0.0.1";
  }
  std::string rest = url.substr(6);
  return rest.substr(0, rest.rfind(':'));
}

std::string ipc_path(const std::string& run_id, std::int64_t node_id) {
  std::error_code ec;
  const auto tmp = std::filesystem::temp_directory_path(ec);
  if (ec) {
    throw ipc_folder_error(ec.message());
  }
  auto dir = tmp / ("ditask-" + run_id);
  return "ipc://" + (dir / ("node_" + std::to_string(node_id) + ".sock")).string();
}

/// DITASK_PLAN's "mesh" object; "token" only when one is set.
nlohmann::json mesh_settings(const Options& options, bool hide_token) {
  nlohmann::json mesh = {
      {"startup_timeout_s", options.startup_timeout}, {"max_frame_bytes", options.max_frame_bytes},
      {"send_queue_bytes", options.send_queue_bytes}, {"send_timeout_s", options.send_timeout},
      {"send_policy", options.send_policy},           {"relay", options.relay}};
  if (!options.token.empty()) {
    mesh["token"] = hide_token ? std::string(kHiddenToken) : options.token;
  }
  return mesh;
}

/// DITASK_PLAN: the settings that have no variable of their own, the same for every worker.
/// "nodes" lists this launcher's workers with their listen addresses as they are now, so call
/// it after ListenSockets::bind_all has put the bound ports in.
nlohmann::json plan_settings(const Plan& plan, const Options& options) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& w : plan.workers) {
    nodes.push_back({{"node_id", w.node_id}, {"local_id", w.local_id}, {"listen", w.listen}});
  }
  nlohmann::json settings = {{"version", 1},
                              {"run_id", plan.run_id},
                              {"run_id_explicit", options.run_id_explicit},
                              {"platform", plan.platform},
                              {"protocol", options.protocol},
                              {"topology", options.topology},
                              {"grace_period_s", options.grace_period},
                              {"nodes", nodes},
                              {"hosts", options.hosts},
                              {"mesh", mesh_settings(options, false)}};
  if (options.mq_type == "redis") {
    const auto& r = options.redis;
    settings["mq"] = {{"type", "redis"}, {"host", r.host}, {"port", r.port}, {"db", r.db}};
    if (!r.user.empty()) {
      settings["mq"]["user"] = r.user;
    }
    if (!r.password.empty()) {
      settings["mq"]["password"] = r.password;
    }
  }
  return settings;
}

/// A worker's contract environment as --dry-run may print it: the token in DITASK_PLAN hidden.
std::map<std::string, std::string> printable_env(std::map<std::string, std::string> env) {
  auto it = env.find("DITASK_PLAN");
  if (it == env.end()) {
    return env;
  }
  auto settings = nlohmann::json::parse(it->second);
  if (settings.contains("mesh") && settings["mesh"].contains("token")) {
    settings["mesh"]["token"] = kHiddenToken;
  }
  if (settings.contains("mq") && settings["mq"].contains("password")) {
    settings["mq"]["password"] = kHiddenToken;
  }
  it->second = settings.dump();
  return env;
}

}  // namespace

std::string make_run_id() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  std::random_device random;
  char tail[16];
  std::snprintf(tail, sizeof tail, "%06x", random() & 0xffffffu);
  return std::string(stamp) + "-" + tail;
}

ditask::Error ipc_folder_error(const std::string& why) {
  const char* tmpdir = std::getenv("TMPDIR");
  return ditask::Error("cannot make the ipc socket folder under TMPDIR='" + std::string(tmpdir ? tmpdir : "/tmp") +
                           "': " + why,
                       "set TMPDIR to a writable folder, or use --protocol tcp");
}

Plan plan_layout(const Options& options, const std::string& run_id) {
  Plan plan;
  plan.run_id = run_id;
  if (!options.platform.empty()) {
    plan.platform = options.platform;
  }
  // A pod's own DNS name may appear only after it started: when it does not resolve at launch,
  // bind every address of the pod and advertise the name (peers retry their dials until it does).
  if (auto a = options.origins.find("address");
      options.platform == "k8s" && a != options.origins.end() && a->second == Source::platform) {
    plan.bind_host = "0.0.0.0";
  }
  const auto n = static_cast<std::size_t>(options.parallel_workers);
  plan.local_world_size = options.parallel_workers;
  plan.world_size = options.world_size > 0 ? options.world_size : options.parallel_workers;
  const std::int64_t first_node = padded(options.node_ids, 0, 0);
  // One launcher owns ranks 0..n-1; in a multi-launcher job (--world-size) ranks follow node ids.
  const std::int64_t rank_offset = plan.world_size > plan.local_world_size ? first_node : 0;
  if (rank_offset + plan.local_world_size > plan.world_size) {
    throw Error("node ids from " + std::to_string(first_node) + " do not fit --world-size " +
                    std::to_string(plan.world_size),
                "with --world-size, give each launcher --node-ids starting at its first rank");
  }
  for (std::size_t i = 0; i < n; ++i) {
    WorkerPlan w;
    w.local_id = static_cast<std::int64_t>(i);
    w.node_id = padded(options.node_ids, 0, i);
    w.rank = rank_offset + w.local_id;
    w.labels = options.labels;
    if (!options.roles.empty()) {
      w.roles = roles_of(options.roles, w.node_id);
    }
    if (options.protocol == "ipc") {
      w.listen = ipc_path(run_id, w.node_id);
    } else {
      const std::int64_t port = options.ports.empty() ? 0 : padded(options.ports, 0, i);
      w.listen = "tcp://" + options.address + ":" + std::to_string(port);
    }
    plan.workers.push_back(std::move(w));
  }
  if (options.platform_info.is_object() && !options.platform_info.value("master_addr", "").empty()) {
    plan.master_addr = options.platform_info["master_addr"];  // the host of the job's rank 0
  } else if (rank_offset == 0) {
    plan.master_addr = options.protocol == "ipc" ? "127.0.0.1" : options.address;
  } else {
    plan.master_addr = options.attach_to.empty() ? options.address : host_of(options.attach_to.front());
  }
  return plan;
}

std::string run_id_for(const Options& options) {
  return options.run_id.empty() ? make_run_id() : options.run_id;
}

void plan_wiring(Plan& plan, const Options& options) {
  const std::string plan_json = plan_settings(plan, options).dump();
  for (std::size_t i = 0; i < plan.workers.size(); ++i) {
    WorkerPlan& w = plan.workers[i];
    w.attach_to.clear();
    if (options.topology == "mesh") {
      for (std::size_t j = 0; j < i; ++j) {
        w.attach_to.push_back(plan.workers[j].listen);
      }
    } else if (options.topology == "star" && i > 0) {
      w.attach_to.push_back(plan.workers[0].listen);
    }
    w.attach_to.insert(w.attach_to.end(), options.attach_to.begin(), options.attach_to.end());
    w.env = {
        {"DITASK_NODE_ID", std::to_string(w.node_id)},
        {"DITASK_LOCAL_ID", std::to_string(w.local_id)},
        {"DITASK_PARALLEL_WORKERS", std::to_string(plan.local_world_size)},
        {"DITASK_WORLD_SIZE", std::to_string(plan.world_size)},
        {"DITASK_LISTEN", w.listen},
        {"DITASK_ATTACH_TO", join(w.attach_to, ",")},
        {"DITASK_TOPOLOGY", options.topology},
        {"DITASK_LABELS", join(w.labels, ",")},
        {"DITASK_ROLES", join(w.roles, ",")},
        {"DITASK_RUN_ID", plan.run_id},
        {"DITASK_PLAN", plan_json},
        {"DITASK_PACKAGE", options.package},
        {"DITASK_MAIN", options.main},
        {"DITASK_LOG_LEVEL", options.log_level},
        {"RANK", std::to_string(w.rank)},
        {"LOCAL_RANK", std::to_string(w.local_id)},
        {"WORLD_SIZE", std::to_string(plan.world_size)},
        {"LOCAL_WORLD_SIZE", std::to_string(plan.local_world_size)},
        {"MASTER_ADDR", plan.master_addr},
    };
    if (plan.master_port != 0) {
      w.env["MASTER_PORT"] = std::to_string(plan.master_port);
    }
  }
}

std::map<std::string, std::string> worker_environment(
    const std::map<std::string, std::string>& inherited, const std::map<std::string, std::string>& contract) {
  std::map<std::string, std::string> env;
  for (const auto& [key, value] : inherited) {
    if (key.rfind("DITASK_", 0) != 0) {
      env.emplace(key, value);
    }
  }
  for (const auto& [key, value] : contract) {
    env[key] = value;
  }
  return env;
}

nlohmann::json plan_to_json(const Plan& plan, const Options& options) {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& w : plan.workers) {
    workers.push_back({{"node_id", w.node_id},
                       {"local_id", w.local_id},
                       {"rank", w.rank},
                       {"listen", w.listen},
                       {"attach_to", w.attach_to},
                       {"labels", w.labels},
                       {"roles", w.roles},
                       {"env", printable_env(w.env)}});
  }
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& [name, source] : options.origins) {
    auto it = options.values.find(name);
    sources[name] = {{"source", to_string(source)},
                     {"value", it == options.values.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second)}};
  }
  return {{"run_id", plan.run_id},
          {"run_id_explicit", options.run_id_explicit},
          {"platform", plan.platform},
          {"package", options.package},
          {"main", options.main},
          {"args", options.module_args},
          {"topology", options.topology},
          {"protocol", options.protocol},
          {"world_size", plan.world_size},
          {"local_world_size", plan.local_world_size},
          {"master_addr", plan.master_addr},
          {"listen_note", options.ports.empty() && options.protocol == "tcp"
                              ? "port 0 stands for a free port the launcher binds at launch"
                              : "addresses are fixed"},
          {"mesh", mesh_settings(options, true)},
          {"platform_layout", options.platform_info},
          {"rendezvous", options.rendezvous.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.rendezvous)},
          {"workers", workers},
          {"options", sources}};
}

}  // namespace ditask::launcher
