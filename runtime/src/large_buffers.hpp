// SPDX-License-Identifier: MIT
// Buffers of large event payloads, kept for reuse once their event is gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ditask::detail {

/// Payload buffers of at least this capacity are worth keeping (smaller ones come from malloc's
/// caches cheaply).
inline constexpr std::size_t kLargeBufferFrom = 64 * 1024;
/// At most this many buffers, and this many bytes of capacity in all, are kept.
inline constexpr std::size_t kLargeBuffersKept = 16;
inline constexpr std::size_t kLargeBufferBytesKept = std::size_t{32} << 20;

/// Keeps `buffer` (its bytes and size as they are) for reuse when its capacity is at least
/// kLargeBufferFrom and the bounds leave room; otherwise frees it. A stream of large events then
/// fills warm memory instead of fresh pages: each fresh page costs a fault and a zeroing, and
/// glibc returns the freed top of its heap to the system once a burst of them is freed.
/// Thread: any.
void keep_large_buffer(std::vector<std::uint8_t>&& buffer) noexcept;
/// keep_large_buffer() for a buffer at least kLargeBufferFrom large; a smaller one is left to its
/// owner's destructor. Inline: it runs for every event's payload, nearly all of them small.
inline void recycle_large_buffer(std::vector<std::uint8_t>&& buffer) noexcept {
  if (buffer.capacity() >= kLargeBufferFrom) {
    keep_large_buffer(std::move(buffer));
  }
}

/// The most recently kept buffer whose capacity is at least `at_least` (and at least
/// kLargeBufferFrom), its old bytes and size as they were; an empty vector when none fits.
/// Thread: any.
std::vector<std::uint8_t> reuse_large_buffer(std::size_t at_least);

/// A buffer of exactly `size` bytes whose contents are unspecified: a kept one cut to size (no
/// bytes written when it held at least `size`), or a new one. For a reader that overwrites every
/// byte. Thread: any.
std::vector<std::uint8_t> large_buffer_of_size(std::size_t size);

}  // namespace ditask::detail
