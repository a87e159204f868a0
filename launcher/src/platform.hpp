// SPDX-License-Identifier: MIT
// --platform slurm|k8s: where this launcher sits in the job, read from the platform's
// environment, and the option values that follow from it (DI-engine's parser contract, minus its
// defects). launchers.md §2, diengine.md §5. Pure code: reads the environment map it is given,
// never resolves a host name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ditask/launcher/options.hpp"

namespace ditask::launcher {

using Env = std::map<std::string, std::string>;

/// One launcher ("task": a Slurm task, a pod) of the job.
struct PlatformTask {
  std::string host;           ///< where its workers listen and peers reach them
  std::int64_t local_id = 0;  ///< its slot on that host (SLURM_LOCALID; 0 for a pod)
};

/// The job as the platform describes it.
struct PlatformLayout {
  std::string name;                  ///< "slurm" or "k8s"
  std::string flavour;               ///< how it was read: "step", "job", "di-orchestrator", "indexed job"
  std::int64_t rank = 0;             ///< this launcher's task (SLURM_PROCID, DI_RANK, JOB_COMPLETION_INDEX)
  std::vector<PlatformTask> tasks;   ///< every task, by rank (empty when only a rendezvous can tell)
  std::int64_t task_count = 0;
  std::int64_t default_port = 0;     ///< the first port of a task's slot 0 (15151, 50515)
  std::string run_id;                ///< shared by every task ("slurm-<job>.<step>"), or empty
  std::string placement;             ///< how ranks map to hosts ("block", "cyclic", ...), for --dry-run
  std::string auto_rendezvous;       ///< what `--rendezvous auto` means here (tcp://first host:port)
  bool serves_rendezvous = false;    ///< this launcher serves `--rendezvous auto` (it runs on that host)
  nlohmann::json variables = nlohmann::json::object();  ///< the variables read, for --dry-run
};

/// Slurm: step-level variables first (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE,
/// SLURM_STEP_NUM_TASKS), then job-level ones; SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID,
/// SLURMD_NODENAME, SLURM_DISTRIBUTION, SLURM_JOB_ID / SLURM_STEP_ID. With `need_placement` the
/// placement of every task must be computable (block or cyclic) and agree with this task's own
/// variables. Errors: ditask::Error naming the variable and its value.
PlatformLayout slurm_layout(const Env& env, bool need_placement);

/// Kubernetes: DI-orchestrator's DI_NODES / DI_RANK (DI_<TASK>_NODES shown), else an Indexed Job's
/// JOB_COMPLETION_INDEX with `pods` launchers named by `host_pattern` ("{index}" replaced).
/// Errors: ditask::Error naming the variable (a rank outside DI_NODES: a re-created pod).
PlatformLayout k8s_layout(const Env& env, std::int64_t pods, const std::string& host_pattern);

/// What the platform layers give the options, before they are checked like any other value.
struct PlatformValues {
  RawValues spec;   ///< level 4: this task's entry of --platform-spec ($node.N resolved)
  RawValues env;    ///< level 5: from the platform's environment
  nlohmann::json info = nlohmann::json::object();  ///< --dry-run's "platform" section
};

/// The values for a launcher of `layout` given what the higher levels chose (`chosen`: command
/// line, DITASK_LAUNCH_*, --config; read for parallel-workers, topology, ports, rendezvous):
/// node ids rank * parallel workers, ports base + slot * parallel workers (base 15151 under
/// Slurm, 50515 on Kubernetes, or --ports), the task's host, world size tasks * parallel workers,
/// the run id, and attach lists by topology (mesh: every worker of the lower ranks; star: the
/// workers of rank 0; alone: none), unless a rendezvous will find the peers at launch.
/// Errors: ditask::Error for a malformed --platform-spec task or an unknown $node.N.
PlatformValues platform_values(const PlatformLayout& layout, const RawValues& chosen, const nlohmann::json& spec);

}  // namespace ditask::launcher
