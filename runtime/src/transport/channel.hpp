// SPDX-License-Identifier: MIT
// The per-peer channel seam: what a transport gives the peer-group engine for each joined peer
// (the mesh a link, Redis the peer's channel on the server, the in-process transport a function
// call into the peer). The engine chooses the peers of an event, holds it for peers not joined
// yet, and hands it to each peer's channel; the channel moves the bytes. docs/design.md "Layout".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "outgoing_event.hpp"

namespace ditask::detail {

/// What a channel did with one event.
enum class SendResult {
  queued,     ///< on its way to the peer (counted sent)
  dropped,    ///< --send-policy drop and the queue was full (counted dropped)
  timed_out,  ///< --send-policy wait and the queue stayed full until the deadline (the send fails)
  closed,     ///< the peer left (counted lost)
  unwanted,   ///< the peer's task handles no such event: not sent (counted unhandled)
};

/// An event held for a peer that has not joined yet (or relayed to it), until its channel is up.
struct HeldEvent {
  BodyPtr body;              ///< topic and payload, shared by every peer it is held for
  std::uint64_t sender = 0;  ///< the node it is from
  std::uint16_t flags = 0;   ///< the wire's frame flags
};

/// Why a channel's queue stayed full, for the error of a send that timed out.
struct Blocked {
  std::string whom;  ///< what the queue leads to ("node 3 (tcp://...)", "Redis at ...")
  std::string hint;  ///< what to do about it
};

/// One joined peer's channel. Thread: any; a transport keeps each peer's events in the order its
/// channel was given them.
class Channel {
 public:
  /// The peer, for logs and errors ("node 3 (tcp://127.0.0.1:5000)").
  virtual std::string peer() const = 0;
  /// The largest event (topic and payload bytes) the peer takes.
  virtual std::size_t max_event_bytes() const noexcept = 0;
  /// Queues one event from node `sender` (`flags`: the wire's frame flags). With no room: returns
  /// dropped at once (`drop_when_full`), or waits until `deadline` and returns timed_out.
  /// `write_here`: the caller holds an inline-write grant (take_inline_write()); a channel that
  /// is idle may write the event on this thread.
  virtual SendResult send_event(OutgoingEvent& event, std::uint64_t sender, std::uint16_t flags, bool drop_when_full,
                                Deadline& deadline, bool write_here) = 0;
  /// After send_event() returned timed_out: what the queue leads to and what to do.
  virtual Blocked blocked() const = 0;
  /// Queues the events held for the peer before its first join, in order, regardless of the
  /// bound (the engine held them within --send-queue-bytes). Returns how many were not sent
  /// because the peer's task handles no such event. Thread: under the transport's lock, so
  /// nothing sent after the join overtakes them.
  virtual std::size_t send_held(const std::vector<HeldEvent>& events) = 0;

 protected:
  ~Channel() = default;
};

}  // namespace ditask::detail
