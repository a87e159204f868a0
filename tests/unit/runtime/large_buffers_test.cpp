// SPDX-License-Identifier: MIT
// The pool of large payload buffers: what it keeps, what it gives back, and its bounds.
#include "large_buffers.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

namespace detail = ditask::detail;
using Bytes = std::vector<std::uint8_t>;

namespace {
// Empties the pool (it is process-wide), so a case starts from nothing kept.
void drain() {
  while (detail::reuse_large_buffer(0).capacity() > 0) {
  }
}
}  // namespace

TEST_CASE("large buffers: a kept buffer comes back with its bytes, the last kept first", "[large_buffers]") {
  drain();
  Bytes first(100000, 1);
  Bytes second(200000, 2);
  const auto* second_data = second.data();
  detail::recycle_large_buffer(std::move(first));
  detail::recycle_large_buffer(std::move(second));
  auto got = detail::reuse_large_buffer(50000);
  CHECK(got.data() == second_data);
  CHECK(got.size() == 200000);
  CHECK(got[199999] == 2);
  // Only a buffer at least as large as asked for is taken.
  CHECK(detail::reuse_large_buffer(150000).capacity() == 0);
  CHECK(detail::reuse_large_buffer(100000).size() == 100000);
  CHECK(detail::reuse_large_buffer(0).capacity() == 0);
}

TEST_CASE("large buffers: a small buffer is not kept", "[large_buffers]") {
  drain();
  detail::recycle_large_buffer(Bytes(detail::kLargeBufferFrom - 1, 3));
  CHECK(detail::reuse_large_buffer(0).capacity() == 0);
}

TEST_CASE("large buffers: at most kLargeBuffersKept buffers and kLargeBufferBytesKept bytes are kept",
          "[large_buffers]") {
  drain();
  for (std::size_t i = 0; i < detail::kLargeBuffersKept + 4; ++i) {
    detail::recycle_large_buffer(Bytes(detail::kLargeBufferFrom, 4));
  }
  std::size_t count = 0;
  while (detail::reuse_large_buffer(0).capacity() > 0) {
    ++count;
  }
  CHECK(count == detail::kLargeBuffersKept);

  const std::size_t big = detail::kLargeBufferBytesKept / 3 + 1;
  for (int i = 0; i < 4; ++i) {
    detail::recycle_large_buffer(Bytes(big, 5));
  }
  count = 0;
  while (detail::reuse_large_buffer(0).capacity() > 0) {
    ++count;
  }
  CHECK(count == 2);  // a third would pass the byte bound
}

TEST_CASE("large buffers: large_buffer_of_size cuts a longer kept buffer without writing to it",
          "[large_buffers]") {
  drain();
  Bytes kept(300000, 6);
  const auto* data = kept.data();
  detail::recycle_large_buffer(std::move(kept));
  auto got = detail::large_buffer_of_size(250000);
  CHECK(got.data() == data);
  CHECK(got.size() == 250000);
  CHECK(got[0] == 6);  // untouched: the caller overwrites every byte
  // None kept that fits: a new one of that size.
  auto fresh = detail::large_buffer_of_size(400000);
  CHECK(fresh.size() == 400000);
  // Small sizes never take a kept buffer.
  detail::recycle_large_buffer(std::move(got));
  CHECK(detail::large_buffer_of_size(10).capacity() < detail::kLargeBufferFrom);
  CHECK(detail::reuse_large_buffer(0).data() == data);
}
