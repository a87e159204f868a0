// SPDX-License-Identifier: MIT
#include "group_round.hpp"

#include <algorithm>
#include <stdexcept>

namespace ditask::detail {

std::string node_list_text(const std::vector<std::int64_t>& nodes) {
  std::string out;
  for (auto n : nodes) {
    out += (out.empty() ? "" : ", ") + std::to_string(n);
  }
  return out;
}

std::string bracketed_node_list_text(const std::vector<std::int64_t>& nodes) {
  // Appended, not `"[" + text`: GCC 12 warns falsely (-Wrestrict) on a literal + a temporary string.
  std::string text = "[";
  text += node_list_text(nodes);
  text += "]";
  return text;
}

GroupRound::GroupRound(const GroupArrival& first)
    : kind_(first.kind), members_(first.members), root_(first.root), op_(first.op) {}

std::optional<std::string> GroupRound::add(std::int64_t node, GroupArrival arrival) {
  if (std::find(members_.begin(), members_.end(), node) == members_.end()) {
    return "node " + std::to_string(node) + " is not among the members " + bracketed_node_list_text(members_);
  }
  if (values_.count(node) != 0) {
    return "node " + std::to_string(node) + " arrived twice in one round";
  }
  if (arrival.members != members_) {
    return "node " + std::to_string(node) + " sees the members " + bracketed_node_list_text(arrival.members) +
           ", another member " + bracketed_node_list_text(members_);
  }
  if (arrival.kind != kind_) {
    return "node " + std::to_string(node) + " called " + arrival.kind + " where another member called " + kind_;
  }
  if (kind_ == "broadcast" && arrival.root != root_) {
    return "node " + std::to_string(node) + " broadcasts from index " + std::to_string(arrival.root) +
           ", another member from index " + std::to_string(root_);
  }
  if (kind_ == "all_reduce" && arrival.op != op_) {
    return "node " + std::to_string(node) + " reduces with " + arrival.op + ", another member with " + op_;
  }
  values_[node] = std::move(arrival.value);
  return std::nullopt;
}

std::vector<std::int64_t> GroupRound::missing() const {
  std::vector<std::int64_t> out;
  for (auto m : members_) {
    if (values_.count(m) == 0) {
      out.push_back(m);
    }
  }
  return out;
}

nlohmann::json GroupRound::result() const {
  if (kind_ == "barrier") {
    return nullptr;
  }
  if (kind_ == "broadcast") {
    return values_.at(members_.at(root_));
  }
  std::vector<double> out;
  bool first = true;
  for (const auto& [node, value] : values_) {
    if (!value.is_array() || !std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_number(); })) {
      throw std::invalid_argument("node " + std::to_string(node) + " passed values that are not a list of numbers");
    }
    if (first) {
      out = value.get<std::vector<double>>();
      first = false;
      continue;
    }
    if (value.size() != out.size()) {
      throw std::invalid_argument("node " + std::to_string(node) + " passed " + std::to_string(value.size()) +
                                  " values, another member " + std::to_string(out.size()));
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double v = value[i].get<double>();
      out[i] = op_ == "max" ? std::max(out[i], v) : op_ == "min" ? std::min(out[i], v) : out[i] + v;
    }
  }
  return out;
}

}  // namespace ditask::detail
