// SPDX-License-Identifier: MIT
/// Groups of nodes by role, and what their members do together: a barrier, a broadcast from
/// one member and an all-reduce (torch.distributed's new_group, barrier, broadcast,
/// all_reduce). docs/groups.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ditask/error.hpp"
#include "ditask/export.hpp"

namespace ditask {

/// Why a collective of a group failed.
class DITASK_API GroupError : public Error {
 public:
  enum class Kind {
    member_left,  ///< a member left (or died) before every member arrived: node() is that member
    timeout,      ///< not every member arrived in time: the message names the missing ones
    mismatch,     ///< members disagree about the group, the collective, its root or its operation
    not_member,   ///< this node is not a member of the group
    stopped,      ///< this node's task is not running (or stopped)
  };
  GroupError(Kind kind, std::string group, std::int64_t node, const std::string& message, std::string hint = {});
  Kind kind() const noexcept { return kind_; }
  /// The group's name.
  const std::string& group() const noexcept { return group_; }
  /// The member that left (member_left), else -1.
  std::int64_t node() const noexcept { return node_; }

 private:
  Kind kind_;
  std::string group_;
  std::int64_t node_;
};

/// How all_reduce combines the members' values, element by element.
enum class ReduceOp { sum, max, min };

/// How long a collective waits for the other members unless told otherwise.
inline constexpr std::chrono::milliseconds kGroupTimeout = std::chrono::minutes(10);

/// The nodes that have one role (their label `role.<name>`), in node-id order; a job started
/// without --roles puts every node in every group (has_role's wildcard). Every member calls
/// the same collectives in the same order (as with torch.distributed); the first member
/// coordinates them. Thread: any thread of a running task, one collective at a time per group.
class DITASK_API Group {
 public:
  /// The group of `role` as the connected nodes say now (Task::group).
  Group(std::string role, std::vector<std::int64_t> members, std::int64_t self);

  /// The role that names it.
  const std::string& name() const noexcept { return name_; }
  /// Its members' node ids, ascending.
  const std::vector<std::int64_t>& members() const noexcept { return members_; }
  std::size_t size() const noexcept { return members_.size(); }
  /// This node's position in members(), or -1 when it is not a member.
  std::int64_t index() const noexcept { return index_; }
  bool contains(std::int64_t node) const noexcept;

  /// Returns once every member called barrier() (the same round).
  /// Errors: GroupError (member_left naming the member, timeout naming the missing ones,
  /// mismatch, not_member, stopped).
  void barrier(std::chrono::milliseconds timeout = kGroupTimeout);
  /// Every member gets the value the member at index `root` passed (the others' values are
  /// ignored). T: anything nlohmann::json converts. Errors: as barrier().
  template <class T>
  T broadcast(const T& value, std::size_t root, std::chrono::milliseconds timeout = kGroupTimeout) {
    return collective("broadcast", nlohmann::json(value), root, ReduceOp::sum, timeout).template get<T>();
  }
  /// Every member gets the element-wise `op` of all members' `values` (the same length on
  /// every member, else mismatch). Errors: as barrier().
  std::vector<double> all_reduce(const std::vector<double>& values, ReduceOp op = ReduceOp::sum,
                                 std::chrono::milliseconds timeout = kGroupTimeout);

 private:
  nlohmann::json collective(const char* kind, nlohmann::json value, std::size_t root, ReduceOp op,
                            std::chrono::milliseconds timeout);

  std::string name_;
  std::vector<std::int64_t> members_;
  std::int64_t self_ = -1;
  std::int64_t index_ = -1;
  std::vector<std::int64_t> attempts_;  // each member's attempt (restart count) when Task::group formed it
  friend class Task;
};

}  // namespace ditask
