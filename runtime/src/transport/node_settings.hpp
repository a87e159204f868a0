// SPDX-License-Identifier: MIT
// What every transport knows of the node it serves: its identity, the job's other workers and
// the limits of sending, read from the environment contract and DITASK_PLAN. A transport's own
// settings (the mesh's addresses, Redis's server) extend or sit beside it. docs/design.md "Layout".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ditask/error.hpp"
#include "ditask/runtime/worker.hpp"

namespace ditask::detail {

/// Another worker of this launcher, from DITASK_PLAN's "nodes".
struct LocalNode {
  std::int64_t node_id = 0;
  std::int64_t local_id = 0;
  std::string listen;
};

/// The transport-neutral settings of one worker. Defaults are the launcher's defaults.
struct NodeSettings {
  std::int64_t node_id = 0;
  std::int64_t local_id = 0;
  std::int64_t attempt = 0;
  std::string run_id;
  bool run_id_explicit = false;
  std::set<std::string> labels;         ///< --labels (the hello adds "node.<id>")
  /// What the layer above puts before each event name on the wire (the task layer: "task.");
  /// received frames of other topics are acknowledged and ignored.
  std::string topic_prefix;
  /// Event names (without the prefix) every peer is sent whatever handlers it declared, declared
  /// by the layer above (a trailing '.' makes a prefix); a transport that filters by interest
  /// knows no event names of its own.
  std::vector<std::string> always_wanted;
  std::vector<LocalNode> local_nodes;   ///< this launcher's workers (this one included)
  /// Peers that exited 0 before this worker started (DITASK_FINISHED_NODES): never expected.
  std::set<std::int64_t> finished_nodes;
  std::optional<std::int64_t> world_size;
  std::chrono::milliseconds startup_timeout{60'000};
  std::size_t max_frame_bytes = 256u << 20;
  std::size_t send_queue_bytes = 8u << 20;
  std::chrono::milliseconds send_timeout{30'000};
  bool drop_when_full = false;          ///< --send-policy drop
};

/// Reads the neutral settings from the parsed contract (DITASK_PLAN's "nodes" and the limits in
/// its "mesh" object, which every transport obeys). Errors: ditask::Error naming the bad plan key.
NodeSettings node_settings(const WorkerEnv& env);

/// DITASK_PLAN's mesh.<key> as a duration (seconds in the plan), or `fallback` when absent.
/// Errors: ditask::Error unless it is a positive number.
std::chrono::milliseconds plan_seconds(const nlohmann::json& limits, const char* key, std::chrono::milliseconds fallback);
/// A malformed DITASK_PLAN entry `key`.
[[noreturn]] void bad_plan(const std::string& key, const std::string& why);

/// The error for a send to `node`, which is not a joined peer; `hint` names the connected ones.
/// A node that finished before this worker started says so.
Error not_a_peer(const NodeSettings& settings, std::int64_t node, std::string hint);

/// In a job of several launchers (world_size beyond this launcher's workers): the job's size
/// that readiness counts joined peers against, less the nodes that finished; nullopt otherwise.
std::optional<std::int64_t> world_beyond_local(const NodeSettings& settings);

/// `text` for an error or log line: control bytes as \xNN, cut after `max` bytes.
std::string printable(std::string_view text, std::size_t max = 64);

/// "N s" for an error message.
std::string seconds_text(std::chrono::milliseconds ms);

}  // namespace ditask::detail
