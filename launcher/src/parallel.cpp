// SPDX-License-Identifier: MIT
#include "ditask/launcher/parallel.hpp"
#include "ditask/launcher/worker_guard.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include "ditask/launcher/launch.hpp"
#include "ditask/runtime/suggest.hpp"
#include "ditask/runtime/worker.hpp"

namespace ditask {
namespace {

constexpr const char* kRunnerMarker = "DITASK_RUNNER";

/// argv of this process, from /proc/self/cmdline (the runner has no access to main's argv).
std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::size_t start = 0;
  while (start < all.size()) {
    auto end = all.find('\0', start);
    args.push_back(all.substr(start, end - start));
    start = end == std::string::npos ? all.size() : end + 1;
  }
  return args;
}

std::string own_exe() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : path.string();
}

std::string numbers(const std::vector<std::int64_t>& values) {
  std::vector<std::string> text;
  for (auto v : values) {
    text.push_back(std::to_string(v));
  }
  return join(text, ",");
}

/// The options as command-line text, so they go through the same validation as `ditask`.
launcher::RawValues raw_values(const RunnerOptions& o, const std::string& exe) {
  launcher::RawValues raw = {
      {"package", exe},
      {"main", "runner"},
      {"parallel-workers", std::to_string(o.n_parallel_workers)},
      {"topology", o.topology},
      {"protocol", o.protocol},
      {"address", o.address},
      {"auto-recover", o.auto_recover ? "true" : "false"},
      {"max-retries", std::to_string(o.max_retries)},
      {"restart-backoff", std::to_string(o.restart_backoff)},
      {"startup-interval", std::to_string(o.startup_interval)},
      {"grace-period", std::to_string(o.grace_period)},
      {"timeout", std::to_string(o.timeout)},
      {"log-level", o.log_level},
      {"mq-type", o.mq_type},
  };
  if (o.world_size > 0) {
    raw["world-size"] = std::to_string(o.world_size);
  }
  if (o.mq_type == "redis") {
    raw["redis-host"] = o.redis_host;
    raw["redis-port"] = std::to_string(o.redis_port);
  }
  if (!o.ports.empty()) {
    raw["ports"] = numbers(o.ports);
  }
  if (!o.node_ids.empty()) {
    raw["node-ids"] = numbers(o.node_ids);
  }
  if (!o.attach_to.empty()) {
    raw["attach-to"] = join(o.attach_to, ",");
  }
  if (!o.labels.empty()) {
    raw["labels"] = join(o.labels, ",");
  }
  if (!o.roles.empty()) {
    raw["roles"] = o.roles;
  }
  if (!o.log_dir.empty()) {
    raw["log-dir"] = o.log_dir;
  }
  return raw;
}

}  // namespace

bool Parallel::in_worker() {
  const char* marker = std::getenv(kRunnerMarker);
  return marker != nullptr && std::string_view(marker) == "1";
}

int Runner::operator()(const std::function<void()>& main_fn) const {
  auto argv = own_argv();
  std::vector<std::string> args(argv.size() > 1 ? argv.begin() + 1 : argv.end(), argv.end());
  if (Parallel::in_worker()) {
    launcher::die_with_launcher();
    return detail::worker_entry_points().run_worker(args, [&main_fn](const WorkerEnv&) { return main_fn; });
  }
  const std::string exe = own_exe();
  // Only the runner's own options count: DITASK_LAUNCH_* steer the ditask command, not programs.
  // DITASK_RUN_ID, DITASK_TOKEN and DITASK_REDIS_PASSWORD still apply, as for ditask: a job's
  // shared run id and secrets.
  std::map<std::string, std::string> inherited;
  for (const auto& [key, value] : launcher::current_environment()) {
    if (key == "DITASK_RUN_ID" || key == "DITASK_TOKEN" || key == "DITASK_REDIS_PASSWORD") {
      inherited.emplace(key, value);
    }
  }
  auto options = launcher::resolve_options(raw_values(options_, exe), inherited);
  options.module_args = args;
  launcher::WorkerCommand command{exe, args};
  return launcher::launch(options, command, {{kRunnerMarker, "1"}});
}

}  // namespace ditask
