// SPDX-License-Identifier: MIT
// A rendezvous entry as written to a folder or sent over tcp (one JSON line), and the rules that
// refuse one: shared by rendezvous_folder.cpp and rendezvous_tcp.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rendezvous.hpp"

namespace ditask::launcher::detail {

/// The hint of every "did not come" error.
inline constexpr const char* kRendezvousHint =
    "start every launcher of the job with the same --rendezvous and run id, within --startup-timeout";

/// An entry with what travels beside it.
struct Published {
  std::string run_id;
  RendezvousEntry entry;
  bool complete = false;        ///< file://: its launcher has read the whole table
  std::int64_t written_us = 0;  ///< file://: its launcher's wall clock when it wrote it (us since 1970)
  bool failed = false;          ///< file://: its launcher's rendezvous failed (written_us: when)
  std::string machine;          ///< file://: its launcher's host name (gethostname), for messages
  std::string space;            ///< file://: its boot id and pid namespace: where `pid` means a process
  std::int64_t pid = 0;         ///< file://: its launcher's pid there
  std::int64_t timeout_ms = 0;  ///< file://: how long its launcher waits (--startup-timeout)
  /// written_us in milliseconds, the unit of timeouts and of the entry's `written_ms` key.
  std::int64_t written_ms() const { return written_us / 1000; }
};

/// `entry` of run `run_id`, with nothing beside it yet.
inline Published published(std::string run_id, RendezvousEntry entry) {
  Published p;
  p.run_id = std::move(run_id);
  p.entry = std::move(entry);
  return p;
}

/// The JSON object of one entry.
nlohmann::json entry_json(const Published& p);

/// Reads an entry. Errors: RendezvousFailed "rendezvous: <where> is malformed: ...".
Published entry_from_json(const nlohmann::json& j, const std::string& where);

/// What to do about launchers of another run id.
inline constexpr const char* kRunIdHint =
    "give every launcher of one job the same run id (--run-id), and another one to the next job";
/// What to do about launchers that name another world size.
inline constexpr const char* kWorldSizeHint =
    "give every launcher of the job the same --world-size: the sum of their --parallel-workers";

/// Why an entry cannot be in this launcher's job, in this launcher's words, with what to do.
struct Conflict {
  std::string reason;  ///< e.g. "rank 1 (host h) belongs to run 'a', this launcher to 'b'"
  const char* hint;    ///< kRunIdHint or kWorldSizeHint
};

/// Why `theirs` (called `who`, e.g. "rank 1 (host h)") cannot be in this launcher's job, or
/// nothing: another run id, or another world size.
std::optional<Conflict> conflict(const RendezvousSpec& spec, const RendezvousEntry& mine, const Published& theirs,
                                 const std::string& who);

/// "0, 2": the ranks below `tasks` that `have` lacks.
std::string missing_ranks(const std::map<std::int64_t, RendezvousEntry>& have, std::int64_t tasks);

/// The entries by rank.
std::vector<RendezvousEntry> table_of(std::map<std::int64_t, RendezvousEntry> have);

/// "within 60 s" for the timeout of `spec`.
std::string within(const RendezvousSpec& spec);

/// Where a pid means a process: the boot id and the pid namespace (containers that share a host
/// name have namespaces of their own). "" when /proc does not tell.
std::string this_process_space();

/// Milliseconds since 1970 on this host's clock.
std::int64_t wall_ms();

/// Microseconds since 1970 on this host's clock.
std::int64_t wall_us();

/// The two rendezvous kinds (rendezvous_folder.cpp, rendezvous_tcp.cpp).
std::vector<RendezvousEntry> by_folder(const RendezvousSpec& spec, const RendezvousEntry& mine);
void leave_folder(const RendezvousSpec& spec, const std::vector<RendezvousEntry>& table) noexcept;
std::vector<RendezvousEntry> serve(const RendezvousSpec& spec, const RendezvousEntry& mine);
std::vector<RendezvousEntry> join_server(const RendezvousSpec& spec, const RendezvousEntry& mine);

}  // namespace ditask::launcher::detail
