// SPDX-License-Identifier: MIT
// An event that came from a peer, on its way from the mesh to the task's dispatcher.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ditask/event_args.hpp"
#include "ditask/event_meta.hpp"
#include "ditask/export.hpp"
#include "ditask/packed_args.hpp"

namespace ditask::detail {

/// Told once per remote event when its handlers ran or it was dropped (acknowledgements and
/// flow control). Thread: the dispatcher thread (or whoever drops the event).
class Receipt {
 public:
  virtual ~Receipt() = default;
  /// `handled`: at least one handler saw it.
  virtual void done(std::uint64_t seq, std::size_t bytes, bool handled) noexcept = 0;
};

/// An event's arguments as they came off the wire: the MessagePack payload (checked to be
/// well-formed) and where its positional arguments lie, so a typed handler reads them without a
/// JSON value being built.
struct PackedPayload {
  std::vector<std::uint8_t> bytes;
  std::size_t args_begin = 0;  ///< offset of the first positional argument
  std::size_t args_end = 0;    ///< offset just past the last one
  std::size_t count = 0;       ///< positional arguments
  std::size_t named_count = 0; ///< named arguments

  /// A view for a typed handler's fast path.
  PackedArgs view() const noexcept {
    return PackedArgs{bytes.data() + args_begin, bytes.data() + args_end, count, named_count};
  }
  /// The arguments as JSON. Errors: ditask::Error (never for a payload the mesh accepted).
  EventArgs unpack() const;
};

/// One remote event (or a runtime notice such as peer_joined, which has no receipt). Exactly
/// one of `args` and `packed` is set.
struct RemoteEvent {
  std::string event;
  std::optional<EventArgs> args;
  std::optional<PackedPayload> packed;
  std::shared_ptr<Receipt> receipt;
  std::shared_ptr<const EventMeta> meta;  ///< its sender; null for a runtime notice (then local)
  bool relayed = false;  ///< a star hub relayed it for its sender (who is not the hub)
  bool notice = false;  ///< a runtime notice about membership (peer_joined, peer_left), not an event a peer sent
  std::uint64_t seq = 0;
  std::size_t bytes = 0;

  /// The arguments as JSON, decoded from `packed` when that is how they came.
  EventArgs unpacked() const { return args ? *args : packed->unpack(); }
};

}  // namespace ditask::detail
