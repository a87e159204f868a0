// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ditask/error.hpp"
#include "ditask/launcher/options.hpp"

namespace ditask::launcher {

/// What one local worker is: identity, address, dial list and its contract environment.
struct WorkerPlan {
  std::int64_t node_id = 0;
  std::int64_t local_id = 0;
  std::int64_t rank = 0;                 ///< dense 0..world_size-1, not the node id
  std::string listen;                    ///< tcp://host:port (port 0 = picked at launch) or ipc:///path
  std::vector<std::string> attach_to;    ///< addresses this worker dials
  std::vector<std::string> labels;
  std::vector<std::string> roles;        ///< from --roles (sorted); empty without it
  std::map<std::string, std::string> env;  ///< contract variables (DITASK_ATTEMPT set per spawn)
};

/// The whole local launch.
struct Plan {
  std::string run_id;
  std::string platform = "local";
  std::int64_t world_size = 0;
  std::int64_t local_world_size = 0;
  std::string master_addr;
  std::int64_t master_port = 0;          ///< for the user's own framework; 0 until launch
  std::string bind_host;                 ///< where tcp sockets bind when the advertised host does not
                                         ///< resolve yet (Kubernetes: 0.0.0.0, pod DNS comes late)
  std::vector<WorkerPlan> workers;
};

/// Node ids, ranks, roles and listen addresses from the options (DI-engine's padding rules: one
/// value is a base, worker i gets base+i). Errors: ditask::Error when ranks cannot be placed or
/// --roles leaves a node without a role or gives it two entries.
Plan plan_layout(const Options& options, const std::string& run_id);

/// Dial lists (DI-engine's mesh/star/alone rules plus --attach-to) and each worker's contract
/// environment, DITASK_PLAN included (its "nodes" carry the listen addresses as they are now);
/// call after listen addresses are final, i.e. after ListenSockets::bind_all.
void plan_wiring(Plan& plan, const Options& options);

/// The plan as --dry-run prints it, with each option's value source. Never holds the token:
/// it shows as "<hidden>" (kHiddenToken), in "mesh" and in each worker's DITASK_PLAN.
nlohmann::json plan_to_json(const Plan& plan, const Options& options);

/// The error for an ipc socket folder that cannot be made under TMPDIR (`why`: the system's
/// reason): a user's setting, so a usage error with a hint, not an internal one.
ditask::Error ipc_folder_error(const std::string& why);

/// A fresh run id: UTC time plus random hex, e.g. "20261129T120301-3fa9c2".
std::string make_run_id();

/// The run id a launch uses: options.run_id (set by resolve_options), else a fresh one.
std::string run_id_for(const Options& options);

/// The worker environment: `inherited` without stale DITASK_* variables, with `contract` on top.
std::map<std::string, std::string> worker_environment(
    const std::map<std::string, std::string>& inherited, const std::map<std::string, std::string>& contract);

}  // namespace ditask::launcher
