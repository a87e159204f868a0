// SPDX-License-Identifier: MIT
// Slurm's host lists and tasks-per-node lists, as its hostlist.c reads them, and where each task
// of a step runs. Pure code (launchers.md §2.3).
//   hostlist  := token (SEP token)*          SEP: ',' or blanks, outside brackets
//   token     := text with '[' ranges ']' groups; each group multiplies (leftmost outermost),
//                text after ']' is kept (node[1-2]-ib)
//   ranges    := range (',' range)*, range := N | N-M; values are zero-padded to the width of
//                the low bound (n[08-10] gives n08 n09 n10, n[8-10] gives n8 n9 n10)
//   tasks per node := item (',' item)*, item := COUNT | COUNT(xREPEAT)   e.g. 2(x3),1
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ditask::launcher {

/// At most this many hosts in one host list (Slurm's cap on one range and on a prefix).
inline constexpr std::size_t kMaxHosts = 65536;

/// The hosts of `text`, in order, duplicates kept. Errors: ditask::Error quoting the text and the
/// offending part: an unclosed '[', an empty or non-numeric range, lo > hi, more than kMaxHosts,
/// a hostlist function ('{').
std::vector<std::string> expand_hostlist(std::string_view text);

/// The task counts of `text` ("2(x3),1" gives 2, 2, 2, 1). Errors: ditask::Error quoting it.
std::vector<std::int64_t> parse_tasks_per_node(std::string_view text);

/// Where one task of a step runs.
struct TaskPlace {
  std::size_t host = 0;       ///< index into the host list
  std::int64_t local_id = 0;  ///< its index among the tasks on that host (SLURM_LOCALID)
};

/// How Slurm spread the tasks over the hosts (the part of SLURM_DISTRIBUTION before ':').
enum class Distribution { block, cyclic };

/// The place of each of the sum(counts) tasks (by SLURM_PROCID), `counts` per host in host order.
/// Block: the first counts[0] procids on host 0, and so on; cyclic: one per host in turn, skipping
/// full hosts.
std::vector<TaskPlace> place_tasks(const std::vector<std::int64_t>& counts, Distribution distribution);

}  // namespace ditask::launcher
