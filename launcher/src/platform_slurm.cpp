// SPDX-License-Identifier: MIT
// --platform slurm: the job layout from the variables srun gives every task (launchers.md §2.1).
#include <charconv>

#include "ditask/error.hpp"
#include "hostlist.hpp"
#include "platform.hpp"

namespace ditask::launcher {
namespace {

constexpr const char* kSlurmHint = "run ditask as a task of srun (srun -n 4 ditask --platform slurm ...)";
constexpr const char* kPlacementHint =
    "start the job with --rendezvous (file:///a/shared/dir or auto), which needs no formula, or give "
    "every task's settings with --platform-spec";

/// The first of `names` that is set (and not empty), recorded in `variables`.
std::optional<std::string> first_of(const Env& env, std::initializer_list<const char*> names, nlohmann::json& variables) {
  for (const char* name : names) {
    if (auto it = env.find(name); it != env.end() && !it->second.empty()) {
      variables[name] = it->second;
      return it->second;
    }
  }
  return std::nullopt;
}

std::int64_t to_count(const std::string& name, const std::string& value, std::int64_t minimum) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < minimum) {
    throw Error("--platform slurm: " + name + "='" + value + "' is not an integer of at least " + std::to_string(minimum),
                kSlurmHint);
  }
  return v;
}

std::string required(const Env& env, std::initializer_list<const char*> names, nlohmann::json& variables) {
  if (auto v = first_of(env, names, variables)) {
    return *v;
  }
  throw Error("--platform slurm: " + std::string(*names.begin()) + " is not set", kSlurmHint);
}

}  // namespace

PlatformLayout slurm_layout(const Env& env, bool need_placement) {
  PlatformLayout l;
  l.name = "slurm";
  l.default_port = 15151;
  auto& vars = l.variables;
  const bool step = env.count("SLURM_STEP_NODELIST") != 0;
  l.flavour = step ? "step" : "job";
  l.rank = to_count("SLURM_PROCID", required(env, {"SLURM_PROCID"}, vars), 0);
  l.task_count = to_count("SLURM_STEP_NUM_TASKS",
                          required(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"}, vars), 1);
  if (l.rank >= l.task_count) {
    throw Error("--platform slurm: SLURM_PROCID=" + std::to_string(l.rank) + " is not below the task count " +
                    std::to_string(l.task_count),
                kSlurmHint);
  }
  const auto local_id = to_count("SLURM_LOCALID", required(env, {"SLURM_LOCALID"}, vars), 0);
  const auto job = first_of(env, {"SLURM_JOB_ID", "SLURM_JOBID"}, vars);
  const auto step_id = first_of(env, {"SLURM_STEP_ID", "SLURM_STEPID"}, vars);
  if (job) {
    l.run_id = "slurm-" + *job + (step_id ? "." + *step_id : "");
  }
  const auto me = first_of(env, {"SLURMD_NODENAME"}, vars);
  const auto node_id = first_of(env, {"SLURM_NODEID"}, vars);
  const auto distribution = first_of(env, {"SLURM_DISTRIBUTION"}, vars).value_or("block");
  const std::string node_level = distribution.substr(0, distribution.find(':'));
  l.placement = node_level;
  const auto nodelist_text =
      required(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}, vars);
  const auto hosts = expand_hostlist(nodelist_text);
  // `--rendezvous auto`: the step's first host, a port from the job id below the ephemeral range.
  std::uint64_t job_number = 0;
  if (job) {
    std::from_chars(job->data(), job->data() + job->size(), job_number);
  }
  l.auto_rendezvous = "tcp://" + hosts.front() + ":" + std::to_string(20000 + job_number % 12000);
  // Served by the first task on that host (whatever its rank: any placement).
  l.serves_rendezvous = local_id == 0 && (node_id ? *node_id == "0" : me.value_or("") == hosts.front());
  if (!need_placement) {
    // A rendezvous tells every task where the others are: only this task's host is needed.
    l.tasks.resize(static_cast<std::size_t>(l.task_count));
    l.tasks[static_cast<std::size_t>(l.rank)] = {me.value_or(hosts.front()), local_id};
    l.placement = "rendezvous";
    return l;
  }
  const auto counts_text = first_of(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}, vars);
  std::vector<std::int64_t> counts;
  if (counts_text) {
    counts = parse_tasks_per_node(*counts_text);
  } else {
    counts.assign(hosts.size(), 0);  // spread as Slurm does by default: as evenly as the count allows
    for (std::int64_t t = 0; t < l.task_count; ++t) {
      ++counts[static_cast<std::size_t>(t) * hosts.size() / static_cast<std::size_t>(l.task_count)];
    }
  }
  if (counts.size() != hosts.size()) {
    throw Error("--platform slurm: " + std::to_string(hosts.size()) + " hosts in '" + nodelist_text + "' but " +
                    std::to_string(counts.size()) + " task counts in '" + counts_text.value_or("") + "'",
                kSlurmHint);
  }
  std::int64_t sum = 0;
  for (auto c : counts) {
    sum += c;
  }
  if (sum != l.task_count) {
    throw Error("--platform slurm: the tasks per node '" + counts_text.value_or("") + "' add up to " +
                    std::to_string(sum) + ", not the " + std::to_string(l.task_count) + " tasks of the step",
                kSlurmHint);
  }
  if (node_level != "block" && node_level != "cyclic") {
    throw Error("--platform slurm: SLURM_DISTRIBUTION=" + distribution +
                    " places tasks in a way the host list cannot tell (block and cyclic only)",
                kPlacementHint);
  }
  const auto places = place_tasks(counts, node_level == "block" ? Distribution::block : Distribution::cyclic);
  for (const auto& place : places) {
    l.tasks.push_back({hosts[place.host], place.local_id});
  }
  // This task's own variables must agree with the formula, or every peer would dial wrong.
  const auto& mine = l.tasks[static_cast<std::size_t>(l.rank)];
  const auto& my_place = places[static_cast<std::size_t>(l.rank)];
  const bool host_differs = me && *me != mine.host;
  const bool node_differs = node_id && to_count("SLURM_NODEID", *node_id, 0) != static_cast<std::int64_t>(my_place.host);
  if (mine.local_id != local_id || host_differs || node_differs) {
    throw Error("--platform slurm: " + node_level + " placement puts task " + std::to_string(l.rank) + " on " +
                    mine.host + " (local id " + std::to_string(mine.local_id) + "), but SLURMD_NODENAME=" +
                    me.value_or("?") + " SLURM_LOCALID=" + std::to_string(local_id),
                kPlacementHint);
  }
  return l;
}

}  // namespace ditask::launcher
