// SPDX-License-Identifier: MIT
#pragma once

/// Who sent an event: what a handler learns when its last parameter is `const ditask::EventMeta&`.

#include <cstdint>
#include <string>
#include <vector>

namespace ditask {

/// Where an event came from. A handler takes it as an optional last parameter
/// (`task.on("ping", [](int n, const ditask::EventMeta& meta) { ... })`) and can answer the
/// sender with `task.emit_to_node(meta.sender, ...)`. Thread: immutable, shared by the events of
/// one sender; valid for the handler's call (copy what outlives it).
struct EventMeta {
  /// The node id of the sender: a peer's for a remote event, this node's own for a local emit
  /// or a runtime notice (peer_joined, peer_left, signals), -1 outside a running task.
  std::int64_t sender = -1;
  /// The sender's start attempt (0 first, 1 after its first restart under --auto-recover);
  /// -1 for an event relayed from a node this node has no link to.
  int attempt = 0;
  /// The sender's labels (roles included as `role.<name>`), as it announced them; empty for an
  /// event relayed from a node this node has no link to.
  std::vector<std::string> labels;
  /// How it came: "local" (this process) or the transport's name ("mesh").
  std::string transport = "local";
  /// True when it came from another node (or from this node's own remote emit to itself).
  bool remote = false;
};

}  // namespace ditask
