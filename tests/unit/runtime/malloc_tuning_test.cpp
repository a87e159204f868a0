// SPDX-License-Identifier: MIT
// A worker's malloc thresholds: when they are set, and that large freed blocks are then reused.
#include "malloc_tuning.hpp"

#include <cstdlib>
#include <sys/resource.h>
#include <vector>

#include <catch2/catch.hpp>

namespace {

using ditask::detail::worker_malloc_thresholds;

long minor_faults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;  // it replaces malloc and ignores mallopt
#else
constexpr bool kSanitizerAllocator = false;
#endif

constexpr std::size_t kBlock = std::size_t{1} << 20;
constexpr std::size_t kBlocks = 16;
constexpr std::size_t kPage = 4096;

// What a stream of 1 MiB frames does to the heap: 16 blocks in flight, written, then all freed.
void frames_in_flight() {
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    void* block = std::malloc(kBlock);
    REQUIRE(block != nullptr);
    auto* bytes = static_cast<volatile char*>(block);  // volatile: the writes (and the block) stay
    for (std::size_t at = 0; at < kBlock; at += kPage) {
      bytes[at] = 1;
    }
    blocks.push_back(block);
  }
  for (void* block : blocks) {
    std::free(block);
  }
}

}  // namespace

TEST_CASE("malloc tuning: a worker keeps large freed blocks unless the user set the thresholds",
          "[malloc]") {
  const auto tuned = worker_malloc_thresholds(nullptr, false);
  REQUIRE(tuned.has_value());
  CHECK(tuned->mmap_bytes == std::size_t{32} << 20);  // glibc's largest on 64-bit
  CHECK(tuned->trim_bytes >= tuned->mmap_bytes);
  CHECK(worker_malloc_thresholds("glibc.malloc.arena_max=2", false).has_value());
  CHECK_FALSE(worker_malloc_thresholds("glibc.malloc.trim_threshold=1000000", false).has_value());
  CHECK_FALSE(worker_malloc_thresholds(
                  "glibc.cpu.x86_rep_movsb_threshold=1:glibc.malloc.mmap_threshold=65536", false)
                  .has_value());
  CHECK_FALSE(worker_malloc_thresholds(nullptr, true).has_value());
}

TEST_CASE("malloc tuning: once set, 1 MiB blocks freed together are reused, not faulted in again",
          "[malloc]") {
  if (kSanitizerAllocator) {
    SUCCEED("a sanitizer's allocator ignores mallopt");
    return;
  }
  if (!worker_malloc_thresholds(std::getenv("GLIBC_TUNABLES"),
                                std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
                                    std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr)) {
    SUCCEED("this environment sets its own thresholds");
    return;
  }
  ditask::detail::keep_freed_memory_for_reuse();
  frames_in_flight();  // the heap grows to hold them once
  const long before = minor_faults();
  for (int round = 0; round < 3; ++round) {
    frames_in_flight();
  }
  const long fresh_pages =
      static_cast<long>(3 * kBlocks * kBlock / kPage);  // what fresh memory would cost
  CHECK(minor_faults() - before < fresh_pages / 10);
}
