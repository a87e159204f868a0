// SPDX-License-Identifier: MIT
// An event that came from a peer, on its way from the mesh to the task's dispatcher.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ditask/event_args.hpp"
#include "ditask/export.hpp"

namespace ditask::detail {

/// Told once per remote event when its handlers ran or it was dropped (acknowledgements and
/// flow control). Thread: the dispatcher thread (or whoever drops the event).
class DITASK_API Receipt {
 public:
  virtual ~Receipt() = default;
  /// `handled`: at least one handler saw it.
  virtual void done(std::uint64_t seq, std::size_t bytes, bool handled) noexcept = 0;
};

/// One remote event (or a runtime notice such as peer_joined, which has no receipt).
struct RemoteEvent {
  std::string event;
  EventArgs args;
  std::shared_ptr<Receipt> receipt;
  std::uint64_t seq = 0;
  std::size_t bytes = 0;
};

}  // namespace ditask::detail
