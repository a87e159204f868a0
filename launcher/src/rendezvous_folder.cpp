// SPDX-License-Identifier: MIT
// The rendezvous over a shared folder: <dir>/<run id>/rank-<r>.json per launcher, polled (a
// shared folder may be NFS, where no change notification reaches other hosts).
//
// A rank is claimed with link(2), which fails when the file exists (atomic on NFS too): a second
// launcher with the same rank is refused while the first one's entry is live. An entry is not
// live, and is neither used nor a claim, when it is left over:
//   - marked failed by its launcher (its rendezvous failed);
//   - its launcher's process is gone (same boot and pid namespace: the pid no longer runs), e.g.
//     stopped by a signal while it waited;
//   - written longer ago than its launcher waits (its startup timeout, plus kClockSkew between
//     hosts).
// A complete entry (its launcher met everyone, and may have ended since: its workers' peers
// still need its addresses) counts for the launchers that started before it completed.
// The entries of a job that ran are removed when it ends (leave_folder), so a re-run starts clean.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <thread>

#include "rendezvous_entry.hpp"

namespace ditask::launcher::detail {

std::string this_process_space() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(boot, id);
  std::error_code ec;
  const auto ns = std::filesystem::read_symlink("/proc/self/ns/pid", ec);
  return id.empty() || ec ? std::string() : id + "/" + ns.string();
}

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

/// How far two hosts' clocks may differ before a live entry looks stale.
constexpr std::int64_t kClockSkewMs = 30000;

fs::path run_folder(const RendezvousSpec& spec) { return fs::path(spec.url.substr(7)) / spec.run_id; }

fs::path rank_file(const fs::path& dir, std::int64_t rank) {
  return dir / ("rank-" + std::to_string(rank) + ".json");
}

std::string this_machine() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

/// Writes `p` to a file of its own next to its entry; returns its path.
fs::path write_aside(const fs::path& dir, const Published& p) {
  const auto file = rank_file(dir, p.entry.rank);
  // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on "." + string&&.
  std::string name = ".";
  name += file.filename().string();
  name += ".";
  name += p.entry.instance;
  name += ".tmp";
  const auto tmp = dir / name;
  std::ofstream out(tmp);
  out << entry_json(p).dump() << "\n";
  out.close();
  if (!out) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error("rendezvous: cannot write '" + tmp.string() + "'", "check that the folder is writable");
  }
  return tmp;
}

/// Writes `p` whole, then renames it into place: a reader never sees half an entry.
void publish(const fs::path& dir, const Published& p) {
  const auto tmp = write_aside(dir, p);
  std::error_code ec;
  fs::rename(tmp, rank_file(dir, p.entry.rank), ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error("rendezvous: cannot write '" + rank_file(dir, p.entry.rank).string() + "': " + ec.message(),
                "check that the folder is writable");
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

/// The launcher that wrote `p` has ended (it ran in this process space, and its pid is gone).
bool launcher_gone(const Published& p) {
  static const std::string here = this_process_space();
  return p.pid > 0 && !here.empty() && p.space == here && ::kill(static_cast<pid_t>(p.pid), 0) != 0 &&
         errno == ESRCH;
}

/// How long after `p` was written its launcher may still be waiting (clocks of other hosts
/// may differ by kClockSkewMs).
std::int64_t waits_until_ms(const Published& p, const RendezvousSpec& spec) {
  return p.written_ms() + (p.timeout_ms > 0 ? p.timeout_ms : spec.timeout.count()) + kClockSkewMs;
}

/// Why another rank's entry is not of the meeting of a launcher that started at `started_ms`, or
/// "" when it may be. A complete entry (its launcher met everyone) counts when it completed after
/// this launcher started: its launcher may have ended since, its job's peers still dial it.
std::string not_of_this_meeting(const Published& p, const RendezvousSpec& spec, std::int64_t started_ms) {
  if (p.failed) {
    return "its launcher's rendezvous failed";
  }
  if (p.complete) {
    const std::int64_t margin = p.space == this_process_space() ? 0 : kClockSkewMs;
    return p.written_ms() + margin < started_ms ? "its launcher met before this one started" : "";
  }
  if (launcher_gone(p)) {
    return "its launcher, pid " + std::to_string(p.pid) + " on this machine, is gone";
  }
  if (waits_until_ms(p, spec) < started_ms) {
    return "written " + std::to_string((started_ms - p.written_ms()) / 1000) + " s before this launcher started";
  }
  return "";
}

/// Why an entry of this launcher's own rank does not hold the rank at `now_ms`, or "" when it
/// does: a live launcher (waiting, or running the job it met for).
std::string not_a_claim(const Published& p, const RendezvousSpec& spec, std::int64_t now_ms) {
  if (p.failed) {
    return "its launcher's rendezvous failed";
  }
  if (launcher_gone(p)) {
    return "its launcher is gone";
  }
  if (p.space != this_process_space() && waits_until_ms(p, spec) < now_ms) {
    return "it is old";
  }
  return "";
}

/// Publishes `me` as the claim of its rank: refused while another launcher's live entry holds it.
void claim(const fs::path& dir, const RendezvousSpec& spec, const Published& me) {
  const auto file = rank_file(dir, me.entry.rank);
  const auto tmp = write_aside(dir, me);
  std::error_code ignored;
  if (::link(tmp.c_str(), file.c_str()) == 0) {
    fs::remove(tmp, ignored);
    return;
  }
  // Taken (or a folder without hard links): a live claim of another launcher wins.
  std::optional<Published> other;
  try {
    other = read_entry(file, file.string());
  } catch (const RendezvousFailed&) {
    fs::remove(tmp, ignored);
    throw;
  }
  if (other && other->entry.instance != me.entry.instance && not_a_claim(*other, spec, me.written_ms()).empty()) {
    fs::remove(tmp, ignored);
    throw RendezvousFailed("rendezvous: rank " + std::to_string(me.entry.rank) + " of run '" + spec.run_id +
                               "' is already claimed in " + dir.string() + " by a launcher on host " +
                               other->entry.host + " (pid " + std::to_string(other->pid) + " on " + other->machine + ")",
                           "give each launcher of the job its own --node-ids, and each job its own --run-id; if "
                           "that launcher is gone, remove " + file.string());
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ignored);
    throw Error("rendezvous: cannot write '" + file.string() + "': " + ec.message(), "check that the folder is writable");
  }
}

/// Polls the entries of `dir` until every rank has one, after `me` was published.
std::vector<RendezvousEntry> meet_in(const fs::path& dir, const RendezvousSpec& spec, Published& me) {
  const RendezvousEntry& mine = me.entry;
  const std::int64_t started_ms = me.written_ms();
  const std::int64_t started_us = me.written_us;
  std::map<std::int64_t, RendezvousEntry> have;
  std::map<std::int64_t, std::string> leftovers;  // rank -> why its entry is not used
  const auto deadline = Clock::now() + spec.timeout;
  auto pause = std::chrono::milliseconds(10);
  while (true) {
    for (std::int64_t r = 0; r < spec.tasks; ++r) {
      if (have.count(r) != 0 && r != mine.rank) {
        continue;
      }
      const auto p = read_entry(rank_file(dir, r), rank_file(dir, r).string());
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
      if (p->failed && p->written_us > started_us) {
        // Failed while this launcher waited: a launcher of this run, whose disagreement fails
        // this one too. In microseconds: in milliseconds, a launcher that failed in the
        // millisecond this one started was either one of this meeting (missed, so this one
        // waited out its timeout) or of a run before (a run started again at once failed).
        if (const auto why = conflict(spec, mine, *p, who(r, *p))) {
          throw RendezvousFailed("rendezvous: " + why->reason, why->hint);
        }
      }
      if (auto why = not_of_this_meeting(*p, spec, started_ms); !why.empty()) {
        leftovers[r] = std::move(why);
        continue;
      }
      leftovers.erase(r);
      if (const auto why = conflict(spec, mine, *p, who(r, *p))) {
        throw RendezvousFailed("rendezvous: " + why->reason, why->hint);
      }
      have[r] = p->entry;
    }
    if (static_cast<std::int64_t>(have.size()) == spec.tasks) {
      me.complete = true;
      me.written_us = wall_us();  // when it met: a complete entry counts for launchers that started before
      publish(dir, me);
      return table_of(std::move(have));
    }
    if (Clock::now() > deadline) {
      std::string notes;
      for (const auto& [rank, why] : leftovers) {
        notes += "; rank " + std::to_string(rank) + "'s entry is left from an earlier run (" + why + ")";
      }
      throw RendezvousFailed("rendezvous: no entry of rank " + missing_ranks(have, spec.tasks) + " in " +
                                 dir.string() + " " + within(spec) + notes,
                             notes.empty() ? kRendezvousHint
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
    throw Error("rendezvous: cannot create '" + dir.string() + "': " + ec.message(),
                "--rendezvous file:// needs a folder every launcher can write");
  }
  Published me = published(spec.run_id, mine);
  me.written_us = wall_us();
  me.machine = this_machine();
  me.space = this_process_space();
  me.pid = ::getpid();
  me.timeout_ms = spec.timeout.count();
  claim(dir, spec, me);
  try {
    return meet_in(dir, spec, me);
  } catch (const RendezvousFailed&) {
    // A failed meeting marks its entry: a next run with this run id does not take it for a live
    // launcher, and a launcher of this run that reads it later still learns of a disagreement.
    try {
      const auto p = read_entry(rank_file(dir, mine.rank), "this launcher's entry");
      if (p && p->entry.instance == mine.instance) {
        me.failed = true;
        me.written_us = wall_us();
        publish(dir, me);
      }
    } catch (const Error&) {
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
