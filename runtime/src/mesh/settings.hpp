// SPDX-License-Identifier: MIT
// What one worker's mesh needs to know, read from the environment contract and DITASK_PLAN.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ditask/error.hpp"
#include "ditask/runtime/worker.hpp"

namespace ditask::detail::mesh {

/// Another worker of this launcher, from DITASK_PLAN's "nodes".
struct LocalNode {
  std::int64_t node_id = 0;
  std::int64_t local_id = 0;
  std::string listen;
};

/// The mesh settings of one worker. Defaults are the launcher's defaults.
struct MeshSettings {
  std::int64_t node_id = 0;
  std::int64_t local_id = 0;
  std::int64_t attempt = 0;
  std::string run_id;
  bool run_id_explicit = false;
  std::set<std::string> labels;         ///< --labels (the hello adds "node.<id>")
  std::string listen;                   ///< DITASK_LISTEN
  int listen_fd = -1;                   ///< DITASK_LISTEN_FD: the pre-bound socket, or -1 to bind `listen`
  std::vector<std::string> dial;        ///< DITASK_ATTACH_TO
  std::string topology = "mesh";
  /// What the layer above puts before each event name on the wire (the task layer: "task.");
  /// received frames of other topics are acknowledged and ignored.
  std::string topic_prefix;
  std::vector<LocalNode> local_nodes;   ///< this launcher's workers (this one included)
  /// Peers that exited 0 before this worker started (DITASK_FINISHED_NODES): never expected.
  std::set<std::int64_t> finished_nodes;
  std::optional<std::int64_t> world_size;
  std::chrono::milliseconds startup_timeout{60'000};
  std::chrono::milliseconds hello_timeout{10'000};
  std::size_t max_frame_bytes = 256u << 20;
  std::size_t send_queue_bytes = 64u << 20;
  std::chrono::milliseconds send_timeout{30'000};
  bool drop_when_full = false;          ///< --send-policy drop
  bool relay = false;                   ///< --relay (star hub)
  std::string token;                    ///< empty: no authentication
  std::map<std::string, std::string> hosts;  ///< DITASK_PLAN "hosts" (--hosts-file): name -> address
};

/// Reads the settings from the parsed contract; `token_env` is DITASK_TOKEN (used when the plan has
/// no token, e.g. under srun). Errors: ditask::Error naming the bad plan key or address.
MeshSettings mesh_settings(const WorkerEnv& env, const char* token_env, const char* listen_fd_env);

/// Node ids of the local workers expected to dial this one (mesh: every higher local worker;
/// star: every other local worker when this is local worker 0); finished ones are not.
std::vector<LocalNode> expected_inbound(const MeshSettings& settings);

/// The error for a send to `node`, which is not a joined peer; `hint` names the connected ones.
/// A node that finished before this worker started says so.
Error not_a_peer(const MeshSettings& settings, std::int64_t node, std::string hint);

/// In a job of several launchers (world_size beyond this launcher's workers): the job's size
/// that readiness counts joined peers against, less the nodes that finished; nullopt otherwise.
std::optional<std::int64_t> world_beyond_local(const MeshSettings& settings);

}  // namespace ditask::detail::mesh
