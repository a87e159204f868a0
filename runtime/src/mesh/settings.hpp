// SPDX-License-Identifier: MIT
// What one worker's mesh needs to know, read from the environment contract and DITASK_PLAN:
// the node's neutral settings (transport/node_settings.hpp) and the mesh's addresses.
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
#include "../transport/node_settings.hpp"

namespace ditask::detail::mesh {

using detail::LocalNode;

/// The mesh settings of one worker: the node's (NodeSettings) and how the mesh reaches its peers.
struct MeshSettings : NodeSettings {
  std::string listen;                   ///< DITASK_LISTEN
  int listen_fd = -1;                   ///< DITASK_LISTEN_FD: the pre-bound socket, or -1 to bind `listen`
  std::vector<std::string> dial;        ///< DITASK_ATTACH_TO
  std::string topology = "mesh";
  std::chrono::milliseconds hello_timeout{10'000};
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

}  // namespace ditask::detail::mesh
