// SPDX-License-Identifier: MIT
// The rendezvous over a shared folder: <dir>/<run id>/rank-<r>.json per launcher, polled (a
// shared folder may be NFS, where no change notification reaches other hosts).
//
// An entry left by an earlier run with the same run id must not be taken for a live one: each
// entry carries its writer's wall clock, and one written longer ago than a launcher of this job
// can have waited (the startup timeout, plus kClockSkew between hosts) is skipped. The entries
// of a job that ran are removed when it ends (leave_folder), so a re-run starts clean.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "rendezvous_entry.hpp"

namespace ditask::launcher::detail {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

/// How far two hosts' clocks may differ before a live entry looks stale.
constexpr std::int64_t kClockSkewMs = 30000;

fs::path run_folder(const RendezvousSpec& spec) { return fs::path(spec.url.substr(7)) / spec.run_id; }

fs::path rank_file(const fs::path& dir, std::int64_t rank) {
  return dir / ("rank-" + std::to_string(rank) + ".json");
}

/// Writes `p` whole, then renames it into place: a reader never sees half an entry.
void publish(const fs::path& dir, const Published& p) {
  const auto file = rank_file(dir, p.entry.rank);
  const auto tmp = dir / ("." + file.filename().string() + "." + p.entry.instance + ".tmp");
  std::ofstream out(tmp);
  out << entry_json(p).dump() << "\n";
  out.close();
  std::error_code ec;
  if (!out || (fs::rename(tmp, file, ec), ec)) {
    throw RendezvousFailed("rendezvous: cannot write '" + file.string() + "'", "check that the folder is writable");
  }
}

/// The entry in `file`, or nullopt when there is none (yet).
std::optional<Published> read_entry(const fs::path& file, const std::string& where) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return std::nullopt;
  }
  return entry_from_json(nlohmann::json::parse(line, nullptr, false), where);
}

std::string who(std::int64_t rank, const Published& p) {
  return "rank " + std::to_string(rank) + " (host " + p.entry.host + ")";
}

/// Polls the entries of `dir` until every rank has one, after `me` was published.
std::vector<RendezvousEntry> meet_in(const fs::path& dir, const RendezvousSpec& spec, Published& me) {
  const RendezvousEntry& mine = me.entry;
  const std::int64_t started_ms = me.written_ms;
  std::map<std::int64_t, RendezvousEntry> have;
  std::map<std::int64_t, std::int64_t> stale_age_s;  // rank -> how old its leftover entry is
  const auto deadline = Clock::now() + spec.timeout;
  auto pause = std::chrono::milliseconds(10);
  while (true) {
    for (std::int64_t r = 0; r < spec.tasks; ++r) {
      if (have.count(r) != 0 && r != mine.rank) {
        continue;
      }
      const auto p = read_entry(rank_file(dir, r), "rank " + std::to_string(r) + "'s entry");
      if (!p) {
        if (r == mine.rank) {
          throw RendezvousFailed("rendezvous: this launcher's entry " + rank_file(dir, r).string() + " was removed",
                                 "the folder must stay while the launchers of the job meet");
        }
        continue;
      }
      if (r == mine.rank) {
        if (p->entry.instance != mine.instance) {
          throw RendezvousFailed("rendezvous: two launchers claim rank " + std::to_string(r) + " of run '" +
                                     spec.run_id + "': this one and one on host " + p->entry.host,
                                 "give each launcher of the job its own --node-ids, and each job its own --run-id");
        }
        have[r] = mine;
        continue;
      }
      if (p->failed) {
        // Failed while this launcher waited: a launcher of this run, and its disagreement
        // fails this one too. Failed earlier: left from an earlier run, as if absent.
        if (const auto why = conflict(spec, mine, *p, who(r, *p)); !why.empty() && p->written_ms >= started_ms) {
          throw RendezvousFailed("rendezvous: " + why, conflict_hint(why));
        }
        continue;
      }
      if (p->written_ms + spec.timeout.count() + kClockSkewMs < started_ms) {
        stale_age_s[r] = (started_ms - p->written_ms) / 1000;
        continue;
      }
      stale_age_s.erase(r);
      if (const auto why = conflict(spec, mine, *p, who(r, *p)); !why.empty()) {
        throw RendezvousFailed("rendezvous: " + why, conflict_hint(why));
      }
      have[r] = p->entry;
    }
    if (static_cast<std::int64_t>(have.size()) == spec.tasks) {
      me.complete = true;
      publish(dir, me);
      return table_of(std::move(have));
    }
    if (Clock::now() > deadline) {
      std::string stale;
      for (const auto& [rank, age] : stale_age_s) {
        stale += "; rank " + std::to_string(rank) + "'s entry is left from an earlier run (written " +
                 std::to_string(age) + " s before this launcher started)";
      }
      throw RendezvousFailed("rendezvous: no entry of rank " + missing_ranks(have, spec.tasks) + " in " +
                                 dir.string() + " " + within(spec) + stale,
                             stale.empty() ? kRendezvousHint
                                           : "remove " + dir.string() + " or give this run another --run-id, "
                                                                        "and start every launcher of the job");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(250));
  }
}


}  // namespace

std::vector<RendezvousEntry> by_folder(const RendezvousSpec& spec, const RendezvousEntry& mine) {
  const fs::path dir = run_folder(spec);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw RendezvousFailed("rendezvous: cannot create '" + dir.string() + "': " + ec.message(),
                           "--rendezvous file:// needs a folder every launcher can write");
  }
  Published me{spec.run_id, mine, false, wall_ms()};
  publish(dir, me);
  try {
    return meet_in(dir, spec, me);
  } catch (const RendezvousFailed&) {
    // A failed meeting marks its entry: a next run with this run id does not take it for a live
    // launcher, and a launcher of this run that reads it later still learns of a disagreement.
    try {
      const auto p = read_entry(rank_file(dir, mine.rank), "this launcher's entry");
      if (p && p->entry.instance == mine.instance) {
        me.failed = true;
        me.written_ms = wall_ms();
        publish(dir, me);
      }
    } catch (const RendezvousFailed&) {
      // The first failure is the one to report.
    }
    throw;
  }
}

void leave_folder(const RendezvousSpec& spec, const std::vector<RendezvousEntry>& table) noexcept {
  try {
    const fs::path dir = run_folder(spec);
    // Only when every launcher has read the table, and only this job's entries (a next run may
    // already have written its own).
    for (const auto& e : table) {
      const auto p = read_entry(rank_file(dir, e.rank), "rank " + std::to_string(e.rank) + "'s entry");
      if (p && (!p->complete || p->entry.instance != e.instance)) {
        return;
      }
    }
    std::error_code ec;
    for (const auto& e : table) {
      fs::remove(rank_file(dir, e.rank), ec);
    }
    fs::remove(dir, ec);  // fails, as it should, while anything else is in it
  } catch (...) {
    // The entries stay; the next run with this run id skips them once they are old.
  }
}

}  // namespace ditask::launcher::detail
