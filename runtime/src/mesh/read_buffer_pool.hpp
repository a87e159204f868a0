// SPDX-License-Identifier: MIT
// The first read buffers of a mesh's links, from one block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ditask/export.hpp"

namespace ditask::detail::mesh {

/// The first read buffers of a mesh's links, carved from one block allocated by the thread that
/// builds the mesh: N links then cost one allocation instead of N on the io thread (whose malloc
/// arena grows a few pages, one mprotect, at a time). A link whose reads fill its buffer moves
/// to a larger one of its own. Thread: any.
class ReadBufferPool {
 public:
  /// `count` buffers of `size` bytes.
  ReadBufferPool(std::size_t count, std::size_t size);
  /// A free buffer of size() bytes, or nullptr when every one is taken.
  std::uint8_t* take();
  /// Returns a buffer that take() gave.
  void give_back(std::uint8_t* buffer);
  std::size_t size() const noexcept { return size_; }

 private:
  std::size_t size_;
  std::unique_ptr<std::uint8_t[]> block_;
  std::mutex mutex_;
  std::vector<std::uint8_t*> free_;  // guarded by mutex_
};

}  // namespace ditask::detail::mesh
