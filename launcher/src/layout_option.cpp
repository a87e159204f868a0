// SPDX-License-Identifier: MIT
#include "layout_option.hpp"

#include <charconv>
#include <map>

#include "ditask/error.hpp"
#include "ditask/launcher/roles.hpp"
#include "option_values.hpp"

namespace ditask::launcher {

namespace {

constexpr const char* kLayoutHint = "use --layout biggraph:machines=M[,partition_servers=P]";

std::int64_t layout_number(const std::string& key, const std::string& value, const std::string& text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    throw Error("--layout " + text + ": " + key + "=" + value + " is not a whole number", kLayoutHint);
  }
  return v;
}

}  // namespace

RankLayout parse_layout(const std::string& text) {
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  if (name != "biggraph") {
    throw Error("--layout: unknown layout '" + name + "' (known: biggraph)", kLayoutHint);
  }
  std::map<std::string, std::string> keys;
  if (colon != std::string::npos) {
    for (const auto& item : detail::split_list(text.substr(colon + 1))) {
      const auto eq = item.find('=');
      const std::string key = item.substr(0, eq);
      if (eq == std::string::npos || (key != "machines" && key != "partition_servers")) {
        throw Error("--layout " + text + ": '" + item + "' is not machines=M or partition_servers=P", kLayoutHint);
      }
      keys[key] = item.substr(eq + 1);
    }
  }
  if (keys.count("machines") == 0) {
    throw Error("--layout " + text + ": machines=M is missing", kLayoutHint);
  }
  const auto machines = layout_number("machines", keys["machines"], text);
  if (machines < 1) {
    throw Error("--layout " + text + ": machines must be at least 1", kLayoutHint);
  }
  const auto servers = keys.count("partition_servers") != 0
                           ? layout_number("partition_servers", keys["partition_servers"], text)
                           : std::int64_t{-1};
  return biggraph_layout(machines, servers);
}

void apply_layout(Options& o, const std::string& text, bool workers_given, const std::string* world_size,
                  bool roles_given) {
  if (roles_given) {
    throw Error("--layout and --roles both give the roles", "use one of them: --layout computes the roles");
  }
  const RankLayout layout = parse_layout(text);
  if (world_size != nullptr || workers_given) {
    std::int64_t job = o.parallel_workers;
    if (world_size != nullptr) {
      const auto [end, ec] = std::from_chars(world_size->data(), world_size->data() + world_size->size(), job);
      if (ec != std::errc() || end != world_size->data() + world_size->size()) {
        return;  // not a number: --world-size's own check says so
      }
    }
    if (job != layout.world_size) {
      throw Error("--layout " + text + " lays out " + std::to_string(layout.world_size) + " workers, but the job has " +
                      std::to_string(job) + (world_size != nullptr ? " (--world-size)" : " (--parallel-workers)"),
                  "drop --parallel-workers (the layout sets it) or give the layout's count");
    }
  } else {
    o.parallel_workers = layout.world_size;
  }
  o.roles = parse_roles(layout.roles());
  o.layout = text;
  o.layout_text = layout.describe();
}

}  // namespace ditask::launcher
