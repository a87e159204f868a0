// SPDX-License-Identifier: MIT
// ditask::Group and Task::group: who the members are, and each collective as one remote call
// of "ditask.group" on the group's first member, which answers every member at once.
#include <algorithm>

#include "../trace/trace.hpp"
#include "../rpc/rpc_engine.hpp"
#include "../rpc/rpc_registry.hpp"
#include "ditask/group.hpp"
#include "ditask/rpc.hpp"
#include "ditask/task.hpp"
#include "../internal_access.hpp"
#include "group_hub.hpp"

namespace ditask {

namespace {

constexpr const char* kGroupFunction = "ditask.group";

GroupError::Kind kind_named(const std::string& kind) {
  if (kind == "member_left") {
    return GroupError::Kind::member_left;
  }
  if (kind == "timeout") {
    return GroupError::Kind::timeout;
  }
  if (kind == "stopped") {
    return GroupError::Kind::stopped;
  }
  return GroupError::Kind::mismatch;
}

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
    case ReduceOp::sum:
      break;
  }
  return "sum";
}

}  // namespace

GroupError::GroupError(Kind kind, std::string group, std::int64_t node, const std::string& message, std::string hint)
    : Error("group '" + group + "': " + message, std::move(hint)), kind_(kind), group_(std::move(group)), node_(node) {}

Group::Group(std::string role, std::vector<std::int64_t> members, std::int64_t self)
    : name_(std::move(role)), members_(std::move(members)), self_(self) {
  std::sort(members_.begin(), members_.end());
  members_.erase(std::unique(members_.begin(), members_.end()), members_.end());
  const auto at = std::find(members_.begin(), members_.end(), self_);
  index_ = at == members_.end() ? -1 : static_cast<std::int64_t>(at - members_.begin());
}

bool Group::contains(std::int64_t node) const noexcept {
  return std::binary_search(members_.begin(), members_.end(), node);
}

void Group::barrier(std::chrono::milliseconds timeout) { collective("barrier", nullptr, 0, ReduceOp::sum, timeout); }

std::vector<double> Group::all_reduce(const std::vector<double>& values, ReduceOp op, std::chrono::milliseconds timeout) {
  return collective("all_reduce", nlohmann::json(values), 0, op, timeout).get<std::vector<double>>();
}

nlohmann::json Group::collective(const char* kind, nlohmann::json value, std::size_t root, ReduceOp op,
                                 std::chrono::milliseconds timeout) {
  // --trace: the name is built only while tracing (off, a hook is one flag load).
  const detail::trace::Span span(detail::trace::Category::group,
                                 detail::trace::on() ? std::string(kind) + " " + name_ : std::string());
  if (index_ < 0) {
    throw GroupError(GroupError::Kind::not_member, name_, -1,
                     "node " + std::to_string(self_) + " is not a member (members [" + detail::node_list_text(members_) + "])",
                     "only nodes with role '" + name_ + "' (--roles) take part in its collectives");
  }
  if (root >= members_.size()) {
    throw GroupError(GroupError::Kind::mismatch, name_, -1,
                     "broadcast from index " + std::to_string(root) + " of a group of " +
                         std::to_string(members_.size()),
                     "give the root as an index into members()");
  }
  auto engine = detail::current_rpc_engine();
  if (!engine) {
    throw GroupError(GroupError::Kind::stopped, name_, -1, "no task is running",
                     "call ditask::task().start() first, in a module run by ditask");
  }
  const std::uint64_t round = engine->groups().next_round(detail::group_key(name_, attempts_));
  const nlohmann::json request = {{"group", name_},   {"round", round},  {"members", members_},
                                  {"kind", kind},     {"root", root},    {"op", op_name(op)},
                                  {"timeout_ms", timeout.count()}, {"value", std::move(value)},
                                  {"attempts", attempts_}};
  const std::int64_t coordinator = members_.front();
  // The coordinator's own answer (which names who is missing) comes before the call's timeout.
  const auto call_timeout = timeout >= std::chrono::milliseconds::max() - std::chrono::seconds(10)
                                ? std::chrono::milliseconds::max()
                                : timeout + std::chrono::seconds(10);
  nlohmann::json answer;
  try {
    answer = rpc().call<nlohmann::json>(Callee(coordinator).within(call_timeout), kGroupFunction, request);
  } catch (const RpcError& e) {
    switch (e.kind()) {
      case RpcError::Kind::node_left:
      case RpcError::Kind::not_connected:
        throw GroupError(GroupError::Kind::member_left, name_, coordinator,
                         "its coordinator, member node " + std::to_string(coordinator) + ", is gone: " + e.reason());
      case RpcError::Kind::timeout:
        throw GroupError(GroupError::Kind::timeout, name_, -1,
                         "no answer from its coordinator, node " + std::to_string(coordinator) + ": " + e.reason());
      case RpcError::Kind::stopped:
        throw GroupError(GroupError::Kind::stopped, name_, -1, e.reason());
      default:
        throw GroupError(GroupError::Kind::mismatch, name_, -1,
                         "its coordinator, node " + std::to_string(coordinator) + ", failed: " + e.reason());
    }
  }
  if (!answer.value("ok", false)) {
    const auto kind_text = answer.value("kind", std::string("mismatch"));
    std::string hint;
    if (kind_text == "mismatch") {
      hint = "every member calls the same collectives in the same order, with the same root and operation";
    } else if (kind_text == "timeout") {
      hint = "a member is slow or stuck; raise the timeout argument";
    }
    throw GroupError(kind_named(kind_text), name_, answer.value("node", std::int64_t{-1}),
                     answer.value("message", std::string("failed")), hint);
  }
  return answer.value("value", nlohmann::json());
}

Group Task::group(std::string_view role) {
  const std::string label = "role." + std::string(role);
  const auto& router = this->router();
  const std::int64_t self = router.node_id();
  const auto own = router.labels();
  const auto peers = router.peers();
  auto has_any_role = [](const std::set<std::string>& labels) {
    return std::any_of(labels.begin(), labels.end(), [](const std::string& l) { return l.starts_with("role."); });
  };
  // Without --roles every node has every role (has_role's wildcard): every node is a member.
  bool roles_given = has_any_role(own);
  for (const auto& p : peers) {
    roles_given = roles_given || has_any_role(p.labels);
  }
  std::vector<std::int64_t> members;
  if (!roles_given || own.count(label) != 0) {
    members.push_back(self);
  }
  for (const auto& p : peers) {
    if (!roles_given || p.labels.count(label) != 0) {
      members.push_back(p.node_id);
    }
  }
  Group group(std::string(role), std::move(members), self);
  // Each member's incarnation: a formation's rounds are its own, and a call that reaches a
  // restarted coordinator is refused rather than held.
  const auto own_attempt = detail::RouterAccess::local_meta(router)->attempt;
  for (auto member : group.members()) {
    std::int64_t attempt = own_attempt;
    for (const auto& p : peers) {
      if (p.node_id == member) {
        attempt = p.attempt;
      }
    }
    group.attempts_.push_back(attempt);
  }
  return group;
}

namespace detail {

void define_group_function() {
  // Straight into the registry: Rpc::define refuses the runtime's "ditask." names.
  rpc_registry().define(kGroupFunction, make_rpc_handlers([](nlohmann::json request, const EventMeta& meta) -> nlohmann::json {
    auto engine = current_rpc_engine();
    if (!engine) {
      return {{"ok", false}, {"kind", "stopped"}, {"node", -1}, {"message", "the coordinator's task stopped"}};
    }
    GroupArrival arrival;
    arrival.kind = request.at("kind").get<std::string>();
    arrival.members = request.at("members").get<std::vector<std::int64_t>>();
    arrival.root = request.at("root").get<std::size_t>();
    arrival.op = request.at("op").get<std::string>();
    arrival.value = request.at("value");
    arrival.attempts = request.value("attempts", std::vector<std::int64_t>{});
    const auto timeout = std::chrono::milliseconds(request.at("timeout_ms").get<std::int64_t>());
    return engine->groups().arrive(request.at("group").get<std::string>(), request.at("round").get<std::uint64_t>(),
                                   meta.sender, std::move(arrival), timeout);
  }), false);
}

}  // namespace detail
}  // namespace ditask
