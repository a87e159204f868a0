// SPDX-License-Identifier: MIT
// One round of one group's collective at its coordinator: who arrived with what, whether they
// agree, and the outcome (nothing for a barrier, the root's value for a broadcast, the
// element-wise reduction for an all-reduce). No threads, no sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ditask::detail {

/// "3, 5, 8": node ids for messages.
std::string node_list_text(const std::vector<std::int64_t>& nodes);
/// "[3, 5, 8]": the same in brackets.
std::string bracketed_node_list_text(const std::vector<std::int64_t>& nodes);

/// What a member brings to a round.
struct GroupArrival {
  std::string kind;                   ///< "barrier", "broadcast" or "all_reduce"
  std::vector<std::int64_t> members;  ///< the group as this member sees it
  std::size_t root = 0;               ///< broadcast: the index of the member whose value counts
  std::string op = "sum";             ///< all_reduce: "sum", "max" or "min"
  nlohmann::json value;
  std::vector<std::int64_t> attempts;  ///< each member's attempt when the group formed (empty: unknown)
};

/// Thread: none of its own (GroupHub's lock guards it).
class GroupRound {
 public:
  /// The round as its first member described it.
  explicit GroupRound(const GroupArrival& first);
  /// Adds `node`'s arrival. Returns why it does not fit (not a member, arrived twice, another
  /// collective, root, operation or member list), or nullopt.
  std::optional<std::string> add(std::int64_t node, GroupArrival arrival);
  /// Every member arrived.
  bool complete() const noexcept { return values_.size() == members_.size(); }
  /// The members that did not arrive yet.
  std::vector<std::int64_t> missing() const;
  /// The outcome once complete. Errors: std::invalid_argument (values that do not reduce: not
  /// numbers, or lists of different lengths).
  nlohmann::json result() const;
  const std::vector<std::int64_t>& members() const noexcept { return members_; }
  std::size_t arrived() const noexcept { return values_.size(); }

 private:
  std::string kind_;
  std::vector<std::int64_t> members_;
  std::size_t root_;
  std::string op_;
  std::map<std::int64_t, nlohmann::json> values_;
};

}  // namespace ditask::detail
