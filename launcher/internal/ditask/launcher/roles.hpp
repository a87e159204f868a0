// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ditask::launcher {

/// One entry of --roles: roles for a range or list of node ids.
///   --roles learner:0,evaluator:1,collector:2-      (a node id, a closed range N-M, an open one N-)
///   --roles learner+evaluator:0,collector:1,3,5-7   (several roles for one node, lists of ids)
struct RoleEntry {
  std::vector<std::string> roles;  ///< "learner", or "learner", "evaluator" for learner+evaluator
  struct Ids {
    std::int64_t first = 0;
    std::optional<std::int64_t> last;  ///< nullopt: open range (first and every id above)
    bool contains(std::int64_t id) const noexcept { return id >= first && (!last || id <= *last); }
  };
  std::vector<Ids> ids;
  std::string text;  ///< the entry as given, for error messages ("collector:2-")
};

/// Parses --roles. Role names are 1-64 characters of A-Z a-z 0-9 _ . -.
/// Errors: ditask::Error (usage) quoting the piece that is not `role[+role...]:ids`.
std::vector<RoleEntry> parse_roles(const std::string& text);

/// The roles of node `node_id` (sorted): those of the one entry that covers it.
/// Errors: ditask::Error naming the node when no entry covers it, or two entries do (a node has
/// several roles only through `a+b:N`).
std::vector<std::string> roles_of(const std::vector<RoleEntry>& entries, std::int64_t node_id);

}  // namespace ditask::launcher
