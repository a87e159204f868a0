// SPDX-License-Identifier: MIT
/// Jobs laid out as named groups of consecutive ranks (node ids), as PyTorch-BigGraph's
/// ProcessRanks does; `ditask --layout` turns one into --roles. docs/groups.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ditask/export.hpp"

namespace ditask {

/// One group of a layout: a role and its ranks, consecutive and ascending.
struct RankGroup {
  std::string role;
  std::vector<std::int64_t> ranks;
};

/// A job's ranks 0..world_size-1 split into groups, in order.
struct RankLayout {
  std::int64_t world_size = 0;
  std::vector<RankGroup> groups;  ///< in rank order; a group may be empty

  /// The --roles text that gives each rank its group's role ("trainer:0-1,lock_server:6").
  DITASK_API std::string roles() const;
  /// One line for people: "trainer 0-1, parameter_server 2-3, ..., world size 8".
  DITASK_API std::string describe() const;
  /// The ranks of `role` (empty when the layout has no such group).
  DITASK_API std::vector<std::int64_t> ranks_of(const std::string& role) const;
};

/// PyTorch-BigGraph's ProcessRanks.from_num_invocations(machines, partition_servers): `machines`
/// trainers, then as many parameter servers and parameter clients, one lock server, then
/// `partition_servers` partition servers (`machines` of them when negative). Roles: trainer,
/// parameter_server, parameter_client, lock_server, partition_server.
/// Errors: ditask::Error when machines < 1.
DITASK_API RankLayout biggraph_layout(std::int64_t machines, std::int64_t partition_servers);

}  // namespace ditask
