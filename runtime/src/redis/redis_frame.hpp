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
  read = 4,   ///< the receiver read (or counted as lost) every event up to `seq` of the stream whose
              ///< sender instance is the 8-byte payload (read_payload)
  refuse = 5, ///< the sender refuses the receiver's process `seq` (its instance) for good (another
              ///< --world-size); the payload is why, in the receiver's words
};

/// A message as read. `topic` and `payload` point into the bytes it was read from.
struct FrameView {
  FrameKind kind = FrameKind::event;
  bool failed = false;
  std::int64_t sender = 0;
  std::uint64_t instance = 0;
  std::uint64_t seq = 0;
  std::string_view topic;
  std::span<const std::uint8_t> payload;
};

/// Bytes before the topic: kind, flags, sender, instance, seq, topic length.
inline constexpr std::size_t kFrameHeaderBytes = 1 + 1 + 8 + 8 + 8 + 2;

/// Appends a message to `out` (cleared first). Errors: std::length_error for a topic longer than
/// 65535 bytes.
void encode_frame(std::vector<std::uint8_t>& out, FrameKind kind, bool failed, std::int64_t sender,
                  std::uint64_t instance, std::uint64_t seq, std::string_view topic,
                  std::span<const std::uint8_t> payload);

/// Reads a message; nullopt for bytes that are not one (too short, unknown kind, a topic past
/// the end).
std::optional<FrameView> decode_frame(std::span<const std::uint8_t> bytes);

/// The payload of a `read` message: the instance of the sender whose events it counts.
std::vector<std::uint8_t> read_payload(std::uint64_t sender_instance);
/// The instance a `read` message's payload names; nullopt when it is not 8 bytes.
std::optional<std::uint64_t> read_instance(std::span<const std::uint8_t> payload) noexcept;

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
  /// The receiver read every event up to `seq`.
  void read_up_to(std::uint64_t seq) noexcept;
  /// Whether `bytes` more fit in `window` (one always fits when nothing is unread).
  bool has_room(std::size_t bytes, std::size_t window) const noexcept {
    return unread_bytes_ == 0 || unread_bytes_ + bytes <= window;
  }
  std::size_t unread_bytes() const noexcept { return unread_bytes_; }
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
