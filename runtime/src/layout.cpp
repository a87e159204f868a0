// SPDX-License-Identifier: MIT
#include "ditask/layout.hpp"

#include "ditask/error.hpp"

namespace ditask {

namespace {
std::string range_text(const std::vector<std::int64_t>& ranks, const char* dash) {
  const std::string first = std::to_string(ranks.front());
  return ranks.size() == 1 ? first : first + dash + std::to_string(ranks.back());
}
}  // namespace

std::string RankLayout::roles() const {
  std::string out;
  for (const auto& g : groups) {
    if (!g.ranks.empty()) {
      out += (out.empty() ? "" : ",") + g.role + ":" + range_text(g.ranks, "-");
    }
  }
  return out;
}

std::string RankLayout::describe() const {
  std::string out;
  for (const auto& g : groups) {
    out += g.role + " " + (g.ranks.empty() ? std::string("none") : range_text(g.ranks, "-")) + ", ";
  }
  return out + "world size " + std::to_string(world_size);
}

std::vector<std::int64_t> RankLayout::ranks_of(const std::string& role) const {
  for (const auto& g : groups) {
    if (g.role == role) {
      return g.ranks;
    }
  }
  return {};
}

RankLayout biggraph_layout(std::int64_t machines, std::int64_t partition_servers) {
  if (machines < 1) {
    throw Error("a biggraph layout needs at least 1 machine, got " + std::to_string(machines));
  }
  RankLayout layout;
  auto add = [&](const char* role, std::int64_t size) {
    RankGroup g{role, {}};
    for (std::int64_t i = 0; i < size; ++i) {
      g.ranks.push_back(layout.world_size++);
    }
    layout.groups.push_back(std::move(g));
  };
  add("trainer", machines);
  add("parameter_server", machines);
  add("parameter_client", machines);
  add("lock_server", 1);
  add("partition_server", partition_servers < 0 ? machines : partition_servers);
  return layout;
}

}  // namespace ditask
