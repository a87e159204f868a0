// SPDX-License-Identifier: MIT
#include "large_buffers.hpp"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <utility>

namespace ditask::detail {

namespace {

// A LIFO of kept buffers: the last one given back is the one most likely still in a cache.
class LargeBufferPool {
 public:
  LargeBufferPool() { kept_.reserve(kLargeBuffersKept); }

  void give(std::vector<std::uint8_t>&& buffer) noexcept {
    const std::size_t capacity = buffer.capacity();
    if (capacity < kLargeBufferFrom) {
      return;
    }
    {
      std::lock_guard lock(mutex_);
      if (kept_.size() < kLargeBuffersKept && kept_bytes_ + capacity <= kLargeBufferBytesKept) {
        kept_bytes_ += capacity;
        kept_.push_back(std::move(buffer));  // reserved: never allocates
        return;
      }
    }
    std::vector<std::uint8_t>().swap(buffer);  // freed outside the lock
  }

  std::vector<std::uint8_t> take(std::size_t at_least) {
    std::lock_guard lock(mutex_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
      if (it->capacity() >= at_least) {
        std::vector<std::uint8_t> found = std::move(*it);
        kept_.erase(std::next(it).base());
        kept_bytes_ -= found.capacity();
        return found;
      }
    }
    return {};
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<std::uint8_t>> kept_;  // guarded by mutex_
  std::size_t kept_bytes_ = 0;                   // guarded by mutex_
};

// Never destroyed: a buffer may be given back by a thread still running at exit.
LargeBufferPool& pool() {
  static auto* kept = new LargeBufferPool;  // NOLINT(cppcoreguidelines-owning-memory)
  return *kept;
}

}  // namespace

void keep_large_buffer(std::vector<std::uint8_t>&& buffer) noexcept { pool().give(std::move(buffer)); }

std::vector<std::uint8_t> reuse_large_buffer(std::size_t at_least) {
  return pool().take(std::max(at_least, kLargeBufferFrom));
}

std::vector<std::uint8_t> large_buffer_of_size(std::size_t size) {
  std::vector<std::uint8_t> buffer = size >= kLargeBufferFrom ? reuse_large_buffer(size) : std::vector<std::uint8_t>{};
  buffer.resize(size);  // cuts a kept buffer that was at least this long without writing a byte
  return buffer;
}

}  // namespace ditask::detail
