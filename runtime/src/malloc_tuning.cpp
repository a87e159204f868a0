// SPDX-License-Identifier: MIT
// glibc's default keeps a freed block of more than 128 KiB only until the heap's free top passes
// twice the largest block freed so far, and maps the first large blocks on their own: a stream of
// 1 MiB frames then faults in fresh pages for every frame (56 page faults per 1 MiB event, 3x
// slower on a VM where a fault is dear). A worker keeps them instead. docs/design.md Decisions.
#include "malloc_tuning.hpp"

#include <cstdlib>
#include <cstring>
#include <malloc.h>

namespace ditask::detail {

namespace {
// 32 MiB is the largest mmap threshold glibc takes on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX).
constexpr std::size_t kMmapThreshold = std::size_t{32} << 20;
constexpr std::size_t kTrimThreshold = std::size_t{64} << 20;
}  // namespace

std::optional<MallocThresholds> worker_malloc_thresholds(const char* glibc_tunables,
                                                         bool malloc_env_set) noexcept {
  if (malloc_env_set) {
    return std::nullopt;
  }
  if (glibc_tunables != nullptr &&
      (std::strstr(glibc_tunables, "glibc.malloc.mmap_threshold") != nullptr ||
       std::strstr(glibc_tunables, "glibc.malloc.trim_threshold") != nullptr)) {
    return std::nullopt;
  }
  return MallocThresholds{kMmapThreshold, kTrimThreshold};
}

void keep_freed_memory_for_reuse() noexcept {
  const bool env_set = std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
                       std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr;
  if (const auto t = worker_malloc_thresholds(std::getenv("GLIBC_TUNABLES"), env_set)) {
    // Sanitizer runtimes replace malloc and ignore this (mallopt returns 0): nothing to undo.
    (void)::mallopt(M_MMAP_THRESHOLD, static_cast<int>(t->mmap_bytes));
    (void)::mallopt(M_TRIM_THRESHOLD, static_cast<int>(t->trim_bytes));
  }
}

}  // namespace ditask::detail
