// SPDX-License-Identifier: MIT
// What one worker publishes to another's Redis channel: an event, or a notice of how many it
// sent (sync, bye), each with the sender's node id, process instance and per-receiver sequence
// number, so the receiver sees the sender's order and counts what it never got. docs/redis.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ditask::detail::redis {

/// What a message is.
enum class FrameKind : std::uint8_t {
  event = 1,  ///< one event: `seq` is its number, `topic` and `payload` are set
  sync = 2,   ///< `seq` is the last event number sent so far (after a reconnect)
  bye = 3,    ///< the sender leaves; `seq` is the last event number it sent (`failed`: it failed)
  read = 4,   ///< the receiver's task is done with (handled, or counted as lost) every event up
              ///< to `seq` of the stream its sender process `to` numbered for it
  refuse = 5, ///< the sender refuses process `to` for good (another --world-size); the payload
              ///< is why, in the receiver's words
  hello = 6,  ///< the sender's answer to process `to`'s hello: the payload is the sender's own
              ///< hello (so a process learns of the live peers that were there before it)
};

/// A message as read. `topic` and `payload` point into the bytes it was read from.
struct FrameView {
  FrameKind kind = FrameKind::event;
  bool failed = false;
  std::int64_t sender = 0;
  std::uint64_t instance = 0;  ///< the sending process
  /// The process it is meant for: events, syncs and byes are numbered for one process of the
  /// receiving node (a restarted one starts a new stream), so another process of that node id
  /// (an earlier or a later one, on the same channel) leaves them alone.
  std::uint64_t to = 0;
  std::uint64_t seq = 0;
  std::string_view topic;
  std::span<const std::uint8_t> payload;
};

/// Bytes before the topic: kind, flags, sender, instance, to, seq, topic length.
inline constexpr std::size_t kFrameHeaderBytes = 1 + 1 + 8 + 8 + 8 + 8 + 2;

/// Appends a message to `out` (cleared first). Errors: std::length_error for a topic longer than
/// 65535 bytes.
void encode_frame(std::vector<std::uint8_t>& out, FrameKind kind, bool failed, std::int64_t sender,
                  std::uint64_t instance, std::uint64_t to, std::uint64_t seq, std::string_view topic,
                  std::span<const std::uint8_t> payload);

/// Reads a message; nullopt for bytes that are not one (too short, unknown kind, a topic past
/// the end).
std::optional<FrameView> decode_frame(std::span<const std::uint8_t> bytes);

/// Bytes a sender may have on their way to one receiver that it has not said it read: below
/// Redis's default `client-output-buffer-limit pubsub` (32 MB, or 8 MB for 60 s), so a fast
/// sender cannot make Redis close a slow receiver's subscription. docs/redis.md.
inline constexpr std::size_t kReadWindowBytes = 4u << 20;
/// A receiver says what it read every this many bytes (and after a sender's sync).
inline constexpr std::size_t kReadNoticeBytes = 1u << 20;

/// The sender's side of one receiver's window: what was published to it and not yet read.
class SendWindow {
 public:
  /// Event `seq` of `bytes` went out.
  void sent(std::uint64_t seq, std::size_t bytes);
  /// The receiver is done with every event up to `seq`: returns how many of those were unread.
  std::size_t read_up_to(std::uint64_t seq) noexcept;
  /// Whether `bytes` more fit in `window` (one always fits when nothing is unread).
  bool has_room(std::size_t bytes, std::size_t window) const noexcept {
    return unread_bytes_ == 0 || unread_bytes_ + bytes <= window;
  }
  std::size_t unread_bytes() const noexcept { return unread_bytes_; }
  /// Events sent and not said read.
  std::size_t unread_count() const noexcept { return unread_.size(); }
  /// Forgets everything (a new receiver process).
  void clear() noexcept;

 private:
  std::deque<std::pair<std::uint64_t, std::size_t>> unread_;  // (seq, bytes), oldest first
  std::size_t unread_bytes_ = 0;
};

/// The receiver's side of one sender's numbers: which arrived in order, which never came.
class SequenceCheck {
 public:
  /// What one number means.
  struct Outcome {
    bool deliver = false;       ///< new: hand the event over
    std::uint64_t missing = 0;  ///< numbers skipped before it (lost on the way)
  };
  /// An event numbered `seq` came (numbers start at 1).
  Outcome on_event(std::uint64_t seq) noexcept;
  /// The sender says it sent `last` so far: returns how many of those never came.
  std::uint64_t on_sent_so_far(std::uint64_t last) noexcept;
  /// The highest number seen or accounted for (what a `read` message reports).
  std::uint64_t last() const noexcept { return last_; }

 private:
  std::uint64_t last_ = 0;  // the highest number seen or accounted for
};

}  // namespace ditask::detail::redis
