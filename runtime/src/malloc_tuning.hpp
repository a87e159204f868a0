// SPDX-License-Identifier: MIT
// How a worker's malloc keeps the memory of large frames for reuse. docs/design.md Decisions.
#pragma once

#include <cstddef>
#include <optional>

namespace ditask::detail {

/// glibc's thresholds for a worker: blocks up to `mmap_bytes` come from the heap (not a mapping
/// of their own), and up to `trim_bytes` freed at the top of a heap stay for reuse.
struct MallocThresholds {
  std::size_t mmap_bytes = 0;
  std::size_t trim_bytes = 0;
};

/// The thresholds a worker sets, or nullopt when the user chose their own: `glibc_tunables` (the
/// GLIBC_TUNABLES variable, or null) names glibc.malloc.mmap_threshold or trim_threshold, or
/// `malloc_env_set` (MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ is set). Thread: any.
std::optional<MallocThresholds> worker_malloc_thresholds(const char* glibc_tunables,
                                                         bool malloc_env_set) noexcept;

/// Applies worker_malloc_thresholds() for this process's environment (mallopt). Call once, early
/// in a worker. Thread: the worker's first.
void keep_freed_memory_for_reuse() noexcept;

}  // namespace ditask::detail
