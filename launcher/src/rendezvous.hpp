// SPDX-License-Identifier: MIT
// How the launchers of one job find each other without any formula (any Slurm placement, pods
// whose names come late): each publishes its rank, host and its workers' bound addresses, and
// gets everyone's back.
//   file:///shared/dir   every launcher writes <dir>/<run id>/rank-<r>.json and reads the others
//   tcp://host:port      one launcher serves the table there (the rank-0 one, or with
//                        `--rendezvous auto` the first on the job's first host); the others connect
// (`--rendezvous auto` is tcp on the first host of the job, the port derived from the job id.)
// Every entry carries the run id and the job's world size: a launcher of another run, or of the
// same run with another --world-size, is refused with the reason on both sides, never waited for.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ditask/error.hpp"
#include "ditask/launcher/launch.hpp"
#include "ditask/runtime/hosts.hpp"

namespace ditask::launcher {

/// One launcher's entry.
struct RendezvousEntry {
  std::int64_t rank = 0;
  std::string host;
  std::vector<std::string> listen;  ///< its workers' addresses, local id order
  std::int64_t world_size = 0;      ///< the job's size as this launcher sees it (--world-size)
  std::string instance;             ///< random per launcher process: tells two claims of one rank apart
  std::vector<std::int64_t> nodes;  ///< its workers' node ids
};

/// Where and how to meet.
struct RendezvousSpec {
  std::string url;            ///< file:///dir or tcp://host:port
  std::string run_id;         ///< every entry must carry the same
  std::int64_t tasks = 1;     ///< launchers in the job
  std::chrono::milliseconds timeout{60000};
  HostMap hosts;              ///< --hosts-file
  bool serve = false;         ///< tcp: this launcher serves the table (one launcher of the job does)
  /// tcp, serving: called with the port once it listens (tests serve on port 0).
  std::function<void(int port)> on_serving;
};

/// A new random instance id for RendezvousEntry::instance.
std::string new_rendezvous_instance();

/// Checks a --rendezvous value. Errors: ditask::Error naming it.
void check_rendezvous_url(const std::string& url);

/// Publishes `mine` and returns every launcher's entry, by rank. Blocks until all `tasks` are
/// there or the timeout. Thread: the launcher's main thread (before any worker starts).
/// Errors: RendezvousFailed naming the ranks that did not show up, a launcher of another run id
/// or world size, a rank claimed twice, an unreachable rendezvous (the last reason).
std::vector<RendezvousEntry> rendezvous(const RendezvousSpec& spec, const RendezvousEntry& mine);

/// After the job: a file:// rendezvous removes the job's entries once every launcher has read
/// the table (the last launcher to end does), so the next run with the same run id starts
/// clean. No-op for tcp. Never throws.
void leave_rendezvous(const RendezvousSpec& spec, const std::vector<RendezvousEntry>& table) noexcept;

/// The attach list of a launcher of rank `rank`: by topology, DI-engine's rules across
/// launchers (mesh: every worker of the lower ranks; star: the workers of rank 0; alone: none).
std::vector<std::string> attach_from(const std::vector<RendezvousEntry>& table, std::int64_t rank,
                                     const std::string& topology);

}  // namespace ditask::launcher
