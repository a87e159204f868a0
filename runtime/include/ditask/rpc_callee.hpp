// SPDX-License-Identifier: MIT
// Where a remote call goes (Callee) and the counters of a node's calls (RpcStats); rpc.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace ditask {

/// Where a call goes: a node id, or the one connected node (this one included) with a role or
/// label; and how long the call may take (Rpc::default_timeout() unless set).
struct Callee {
  /// Node `node`.
  Callee(std::int64_t id) : node(id) {}  // NOLINT: implicit, so call(1, ...) reads naturally
  /// The one node with role `name` (--roles).
  static Callee role(std::string_view name) { return label("role." + std::string(name)); }
  /// The one node with a label matching the fnmatch glob `pattern`.
  static Callee label(std::string pattern) {
    Callee c(-1);
    c.node.reset();
    c.label_pattern = std::move(pattern);
    return c;
  }
  /// This callee with a timeout for the call.
  Callee within(std::chrono::milliseconds limit) const {
    Callee c = *this;
    c.timeout = limit;
    return c;
  }

  std::optional<std::int64_t> node;
  std::string label_pattern;
  std::optional<std::chrono::milliseconds> timeout;
};

/// Counters of this node's calls since its task started.
struct RpcStats {
  std::uint64_t calls = 0;          ///< calls made (to other nodes and to itself)
  std::uint64_t answered = 0;       ///< of those, replied to without an error (bad_result too)
  std::uint64_t failed = 0;         ///< of those, failed with any other RpcError kind
  std::uint64_t timed_out = 0;      ///< of the failed, by their timeout
  std::uint64_t late_replies = 0;   ///< answers that came after their call had failed (dropped)
  std::uint64_t served = 0;         ///< calls this node ran for others (and itself)
  std::uint64_t objects = 0;        ///< objects this node owns now
  std::uint64_t handles = 0;        ///< handles to other nodes' objects this node holds now
};

}  // namespace ditask
