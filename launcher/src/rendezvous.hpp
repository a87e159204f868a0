// SPDX-License-Identifier: MIT
// How the launchers of one job find each other without any formula (any Slurm placement, pods
// whose names come late): each publishes its rank, host and its workers' bound addresses, and
// gets everyone's back.
//   file:///shared/dir   every launcher writes <dir>/<run id>/rank-<r>.json and reads the others
//   tcp://host:port      one launcher serves the table there (the rank-0 one, or with
//                        `--rendezvous auto` the first on the job's first host); the others connect
// (`--rendezvous auto` is tcp on the first host of the job, the port derived from the job id.)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ditask/runtime/hosts.hpp"

namespace ditask::launcher {

/// One launcher's entry.
struct RendezvousEntry {
  std::int64_t rank = 0;
  std::string host;
  std::vector<std::string> listen;  ///< its workers' addresses, local id order
};

/// Where and how to meet.
struct RendezvousSpec {
  std::string url;            ///< file:///dir or tcp://host:port
  std::string run_id;         ///< every entry must carry the same
  std::int64_t tasks = 1;     ///< launchers in the job
  std::chrono::milliseconds timeout{60000};
  HostMap hosts;              ///< --hosts-file
  bool serve = false;         ///< tcp: this launcher serves the table (one launcher of the job does)
};

/// Checks a --rendezvous value. Errors: ditask::Error naming it.
void check_rendezvous_url(const std::string& url);

/// Publishes `mine` and returns every launcher's entry, by rank. Blocks until all `tasks` are
/// there or the timeout. Thread: the launcher's main thread (before any worker starts).
/// Errors: ditask::Error naming the ranks that did not show up, a foreign run id, an unreachable
/// rendezvous (the last reason).
std::vector<RendezvousEntry> rendezvous(const RendezvousSpec& spec, const RendezvousEntry& mine);

/// The attach list of a launcher of rank `rank`: by topology, DI-engine's rules across
/// launchers (mesh: every worker of the lower ranks; star: the workers of rank 0; alone: none).
std::vector<std::string> attach_from(const std::vector<RendezvousEntry>& table, std::int64_t rank,
                                     const std::string& topology);

}  // namespace ditask::launcher
