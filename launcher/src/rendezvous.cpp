// SPDX-License-Identifier: MIT
// The rendezvous entry, the rules that refuse one, and the choice between the two kinds.
#include "rendezvous.hpp"

#include <cstdio>
#include <map>
#include <random>

#include "ditask/runtime/suggest.hpp"
#include "rendezvous_entry.hpp"

namespace ditask::launcher {
namespace detail {

nlohmann::json entry_json(const Published& p) {
  const auto& e = p.entry;
  nlohmann::json j = {{"run_id", p.run_id},         {"rank", e.rank},         {"host", e.host},
                      {"listen", e.listen},         {"world_size", e.world_size}, {"instance", e.instance},
                      {"nodes", e.nodes}};
  if (p.written_us != 0) {
    j["written_ms"] = p.written_ms();
    j["written_us"] = p.written_us;
    j["complete"] = p.complete;
    j["failed"] = p.failed;
    j["machine"] = p.machine;
    j["space"] = p.space;
    j["pid"] = p.pid;
    j["timeout_ms"] = p.timeout_ms;
  }
  return j;
}

Published entry_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    Published p;
    p.run_id = j.at("run_id").get<std::string>();
    p.entry.rank = j.at("rank").get<std::int64_t>();
    p.entry.host = j.at("host").get<std::string>();
    p.entry.listen = j.at("listen").get<std::vector<std::string>>();
    p.entry.world_size = j.value("world_size", std::int64_t{0});
    p.entry.instance = j.value("instance", std::string());
    p.complete = j.value("complete", false);
    p.failed = j.value("failed", false);
    p.machine = j.value("machine", std::string());
    p.space = j.value("space", std::string());
    p.pid = j.value("pid", std::int64_t{0});
    p.timeout_ms = j.value("timeout_ms", std::int64_t{0});
    p.entry.nodes = j.value("nodes", std::vector<std::int64_t>());
    p.written_us = j.value("written_us", j.value("written_ms", std::int64_t{0}) * 1000);
    return p;
  } catch (const nlohmann::json::exception&) {
    throw RendezvousFailed("rendezvous: " + where + " is not a ditask rendezvous entry",
                           "remove it: every launcher writes its own entry at start");
  }
}

std::optional<Conflict> conflict(const RendezvousSpec& spec, const RendezvousEntry& mine, const Published& theirs,
                                 const std::string& who) {
  if (theirs.run_id != spec.run_id) {
    return Conflict{who + " belongs to run '" + theirs.run_id + "', this launcher to '" + spec.run_id + "'",
                    kRunIdHint};
  }
  if (theirs.entry.world_size > 0 && mine.world_size > 0 && theirs.entry.world_size != mine.world_size) {
    return Conflict{who + " says the job has " + std::to_string(theirs.entry.world_size) +
                        " workers (--world-size), this launcher " + std::to_string(mine.world_size),
                    kWorldSizeHint};
  }
  return std::nullopt;
}

std::string missing_ranks(const std::map<std::int64_t, RendezvousEntry>& have, std::int64_t tasks) {
  std::vector<std::string> missing;
  for (std::int64_t r = 0; r < tasks; ++r) {
    if (have.count(r) == 0) {
      missing.push_back(std::to_string(r));
    }
  }
  return join(missing, ", ");
}

std::vector<RendezvousEntry> table_of(std::map<std::int64_t, RendezvousEntry> have) {
  std::vector<RendezvousEntry> table;
  for (auto& [rank, e] : have) {
    table.push_back(std::move(e));
  }
  return table;
}

std::string within(const RendezvousSpec& spec) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(spec.timeout.count()) / 1000.0);
  return std::string("within ") + text + " s";
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace detail

std::string new_rendezvous_instance() {
  std::random_device random;
  std::uniform_int_distribution<std::uint64_t> pick;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(pick(random)));
  return text;
}

void check_rendezvous_url(const std::string& url) {
  if (url.rfind("file:///", 0) == 0 && url.size() > 8) {
    return;
  }
  if (url.rfind("tcp://", 0) == 0) {
    const auto rest = url.substr(6);
    const auto colon = rest.rfind(':');
    const bool port_ok = colon != std::string::npos && colon + 1 < rest.size() &&
                         rest.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
                         rest.size() - colon - 1 <= 5 && std::stol(rest.substr(colon + 1)) >= 1 &&
                         std::stol(rest.substr(colon + 1)) <= 65535;
    if (colon != 0 && port_ok) {
      return;
    }
  }
  if (url == "auto") {
    return;
  }
  throw Error("--rendezvous '" + url + "' is not file:///dir, tcp://host:port or auto",
              "file:///shared/dir (a folder every launcher sees), tcp://host:port (served by the rank-0 "
              "launcher), auto (tcp on the job's first host)");
}

std::vector<RendezvousEntry> rendezvous(const RendezvousSpec& spec, const RendezvousEntry& mine) {
  auto table = spec.url.rfind("file://", 0) == 0 ? detail::by_folder(spec, mine)
               : spec.serve                      ? detail::serve(spec, mine)
                                                 : detail::join_server(spec, mine);
  // Every launcher has the same table, so each finds the same node id given twice.
  std::map<std::int64_t, const RendezvousEntry*> owner;
  for (const auto& e : table) {
    for (const auto node : e.nodes) {
      if (const auto [it, fresh] = owner.emplace(node, &e); !fresh) {
        throw RendezvousFailed("rendezvous: node id " + std::to_string(node) + " is on two launchers: rank " +
                                   std::to_string(it->second->rank) + " (host " + it->second->host + ") and rank " +
                                   std::to_string(e.rank) + " (host " + e.host + ")",
                               "give each launcher of the job its own --node-ids");
      }
    }
  }
  return table;
}

void leave_rendezvous(const RendezvousSpec& spec, const std::vector<RendezvousEntry>& table) noexcept {
  if (spec.url.rfind("file://", 0) == 0) {
    detail::leave_folder(spec, table);
  }
}

std::vector<std::string> attach_from(const std::vector<RendezvousEntry>& table, std::int64_t rank,
                                     const std::string& topology) {
  std::vector<std::string> out;
  if (topology == "alone") {
    return out;
  }
  const std::int64_t last = topology == "mesh" ? rank : std::min<std::int64_t>(rank, 1);
  for (const auto& e : table) {
    if (e.rank < last) {
      out.insert(out.end(), e.listen.begin(), e.listen.end());
    }
  }
  return out;
}

}  // namespace ditask::launcher
