// SPDX-License-Identifier: MIT
// The table of transports by URL scheme, choosing a worker's from its contract, and the worker's
// one transport. docs/design.md "Layout".
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ditask/runtime/worker.hpp"
#include "node_settings.hpp"
#include "transport.hpp"

namespace ditask::detail {

/// Creates and starts a transport for the node `node` describes (its own settings are bound in).
/// Errors: ditask::Error when it cannot start (e.g. its listening address is taken).
using TransportStarter = std::function<std::shared_ptr<Transport>(const NodeSettings& node)>;

/// Which transport a worker uses, with its settings (read from the launcher's plan).
struct TransportPlan {
  std::string scheme;      ///< its URL scheme: "tcp" or "ipc" (the mesh), "redis"
  NodeSettings node;       ///< the node and the limits every transport obeys
  TransportStarter start;  ///< creates and starts it
};

/// One kind of transport, registered by the URL scheme of its addresses.
struct TransportKind {
  std::string_view scheme;
  /// Reads the transport's own settings from the contract (errors now, not at its start) and
  /// returns how to start it.
  TransportStarter (*plan)(const WorkerEnv& env);
};

/// Every transport this runtime has: tcp://, ipc:// (the mesh), redis://.
std::span<const TransportKind> transport_kinds();

/// The scheme of an address ("tcp" for "tcp://host:port"; "tcp" when it has none).
std::string scheme_of(const std::string& address);

/// The URL scheme the contract names: "redis" when DITASK_PLAN's "mq" says so, else the scheme of
/// the worker's listening address ("tcp" when it has none).
std::string transport_scheme(const WorkerEnv& env);

/// The plan for `env`, from the table. Errors: ditask::Error for a malformed contract or a scheme
/// no transport registered (listing those that did).
TransportPlan transport_plan(const WorkerEnv& env);

/// Creates and starts the transport `plan` names.
std::shared_ptr<Transport> make_transport(const TransportPlan& plan);

/// Worker mode: the plan worker_transport(true) uses. Thread: any; before the entry runs.
void set_worker_transport_plan(TransportPlan plan);
/// Whether this process is a ditask worker (it has a transport plan, or a transport).
bool in_worker_mode();

}  // namespace ditask::detail
