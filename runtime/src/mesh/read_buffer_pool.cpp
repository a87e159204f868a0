// SPDX-License-Identifier: MIT
#include "read_buffer_pool.hpp"

namespace ditask::detail::mesh {

ReadBufferPool::ReadBufferPool(std::size_t count, std::size_t size)
    : size_(size), block_(new std::uint8_t[count * size]) {  // not zeroed: untouched pages cost nothing
  free_.reserve(count);
  for (std::size_t i = count; i > 0; --i) {
    free_.push_back(block_.get() + (i - 1) * size);
  }
}

std::uint8_t* ReadBufferPool::take() {
  std::lock_guard lock(mutex_);
  if (free_.empty()) {
    return nullptr;
  }
  auto* buffer = free_.back();
  free_.pop_back();
  return buffer;
}

void ReadBufferPool::give_back(std::uint8_t* buffer) {
  std::lock_guard lock(mutex_);
  free_.push_back(buffer);
}

}  // namespace ditask::detail::mesh
