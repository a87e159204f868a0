// SPDX-License-Identifier: MIT
// The mesh wire format: one fixed 32-byte little-endian header, then the topic, then the payload.
//
//   offset size field
//        0    4 magic "DTSK"
//        4    1 version (kWireVersion)
//        5    1 frame type (FrameType)
//        6    2 flags (0 for now; ignored when decoding)
//        8    8 sender node id
//       16    8 sequence number
//       24    2 topic length in bytes
//       26    2 reserved (must be 0)
//       28    4 payload length in bytes
//
// Pure code: no sockets, no threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ditask/event_args.hpp"
#include "../remote_event.hpp"
#include "ditask/export.hpp"

namespace ditask::detail::mesh {

/// Size of the fixed frame header.
inline constexpr std::size_t kHeaderSize = 32;
/// The only wire version this build speaks (2: the welcome frame).
inline constexpr std::uint8_t kWireVersion = 2;
/// Longest topic a header can describe.
inline constexpr std::size_t kMaxTopicBytes = 0xFFFF;
/// Longest payload a header can describe (4 GiB - 1).
inline constexpr std::size_t kMaxPayloadBytes = 0xFFFF'FFFF;

/// What a frame carries. Values are on the wire: never renumber.
///  hello: first frame each way, payload = encode_hello (hello.hpp).
///  event: topic = the layer's prefix (the task layer's "task.") + the event name, payload = the event envelope (codec/envelope.hpp); seq counts events per connection from 1.
///  bye:   orderly leave or refusal, payload = MessagePack {"reason": text}.
///  ack:   seq = highest event seq the receiver has handed to its handlers; no payload.
///  ping:  no payload; the sender waits for acks (it is stopping): acknowledge at once from now on.
///  auth:  token proof (auth.hpp), payload = the proof bytes.
///  welcome: this side accepted the peer (hello, token proof, node id); no payload. A link is
///         established once each side has accepted the other and received its welcome, so a
///         refused peer never joins, not even for a moment.
enum class FrameType : std::uint8_t { hello = 1, event = 2, bye = 3, ack = 4, ping = 5, auth = 6, welcome = 7 };
/// Flag bit: an event a star hub relays for its original sender (header sender = that sender).
inline constexpr std::uint16_t kFlagRelayed = 1;
/// Flag bit: an event sent to chosen peers (emit_to_node, emit_to_label, a remote call or its
/// reply), not to all: a relaying star hub keeps it for itself instead of relaying it.
inline constexpr std::uint16_t kFlagTargeted = 2;
/// Topic prefix of a spoke's event for one other spoke of a relaying star:
/// `relay.<node id>/task.<event>`; the hub strips it and forwards the event to that node only.
inline constexpr const char* kRelayPrefix = "relay.";

/// One decoded (or to-be-encoded) frame.
struct Frame {
  FrameType type = FrameType::event;
  std::uint16_t flags = 0;
  std::uint64_t sender = 0;
  std::uint64_t seq = 0;
  std::string topic;
  std::vector<std::uint8_t> payload;  ///< the payload, unless `shared` holds it
  /// With FrameDecoder::share_small_payloads: a small event payload, in a buffer shared with the
  /// other small events of the same read.
  std::shared_ptr<const std::uint8_t> shared{};  // (initialised: Frame{...} may leave it out)
  std::size_t shared_size = 0;

  /// The payload's bytes, wherever they are.
  std::span<const std::uint8_t> body() const noexcept {
    return shared ? std::span<const std::uint8_t>(shared.get(), shared_size) : std::span<const std::uint8_t>(payload);
  }
  bool operator==(const Frame&) const = default;
};

/// The fixed-size part of a frame, without its topic and payload bytes.
struct FrameHeader {
  FrameType type = FrameType::event;
  std::uint16_t flags = 0;
  std::uint64_t sender = 0;
  std::uint64_t seq = 0;
  std::size_t topic_bytes = 0;
  std::size_t payload_bytes = 0;
};

/// The header of `frame` (its topic and payload sizes included).
FrameHeader header_of(const Frame& frame) noexcept;

/// The 32 header bytes, so a writer can send header + topic + payload as one buffer sequence
/// without copying the payload. Errors: ditask::Error when the topic or payload is too long.
std::array<std::uint8_t, kHeaderSize> encode_header(const FrameHeader& header);

/// The whole frame as one contiguous buffer. Errors: as encode_header.
std::vector<std::uint8_t> encode(const Frame& frame);

/// A parsed header, or why it was refused.
struct HeaderResult {
  FrameHeader header;
  std::optional<std::string> error;
};

/// Parses and validates 32 header bytes: magic, version, type, reserved field, and topic + payload
/// no longer than `max_frame_bytes`. For readers that read the header and the body separately.
HeaderResult decode_header(std::span<const std::uint8_t, kHeaderSize> bytes,
                                      std::size_t max_frame_bytes);

/// What one FrameDecoder::feed produced: the frames completed by these bytes (in order) and, when
/// the stream turned out to be invalid, what was wrong.
struct DecodeResult {
  std::vector<Frame> frames;
  std::optional<std::string> error;
};

/// Turns a byte stream, cut into chunks of any size, into frames. Buffers at most one frame: never
/// more than kHeaderSize + max_frame_bytes, whatever a header claims.
/// Thread: one owner (the connection's reader). After an error it is poisoned: every later feed
/// returns the same error and no frames, and the caller closes the connection.
class FrameDecoder {
 public:
  /// `max_frame_bytes` bounds topic + payload of one frame.
  explicit FrameDecoder(std::size_t max_frame_bytes);

  /// Appends `bytes`; returns the frames they complete. Frames completed before an invalid header
  /// in the same chunk are returned together with the error. Errors: in the result, never thrown
  /// for bad input (std::bad_alloc may still escape).
  DecodeResult feed(std::span<const std::uint8_t> bytes);
  /// feed() into `out`, which is emptied first and keeps its capacity (a reader's hot path:
  /// no allocation per read for the list of frames).
  void feed(std::span<const std::uint8_t> bytes, DecodeResult& out);

  /// While a frame's payload of at most `max_direct` bytes is arriving and at least `min` bytes
  /// of it are still missing (or a tail of it was given before): where they go, for the caller
  /// to read into directly (then filled()); empty otherwise. Saves copying a large payload out of the read buffer. Only
  /// payloads of kLargeBufferFrom bytes up to 16 MiB are read so (sized in full from a kept
  /// buffer when their header arrives).
  std::span<std::uint8_t> payload_tail(std::size_t min, std::size_t max_direct);
  /// `n` bytes were read into payload_tail(); returns the frame once it is complete.
  DecodeResult filled(std::size_t n);
  /// filled() into `out`, emptied first.
  void filled(std::size_t n, DecodeResult& out);

  /// From now on, event frames of at most `max_bytes` of payload that arrive whole in one feed()
  /// carry their payload in `Frame::shared`: one buffer per feed() for all of them, instead of
  /// one allocation each (the reader's hot path). 0 (the default): never.
  void share_small_payloads(std::size_t max_bytes) noexcept { share_below_ = max_bytes; }

  /// True once feed has reported an error.
  bool poisoned() const noexcept { return error_.has_value(); }
  /// Bytes of the partial frame held (header and body so far).
  std::size_t buffered() const noexcept;

 private:
  /// Moves body bytes from `bytes` into current_; true when the frame is complete.
  bool fill_body(std::span<const std::uint8_t>& bytes);
  /// A whole small event frame at the start of `bytes`, its payload put in `chunk` (made on first
  /// use, as large as what is left of the read): false (nothing taken) when it is not one.
  bool take_whole_shared(std::span<const std::uint8_t>& bytes, std::shared_ptr<std::uint8_t[]>& chunk,
                         std::size_t& chunk_used, std::size_t& chunk_size, DecodeResult& out);

  std::size_t max_frame_bytes_;
  std::array<std::uint8_t, kHeaderSize> header_bytes_{};
  std::size_t header_fill_ = 0;
  std::optional<FrameHeader> header_;  // set while the body is being read
  Frame current_;
  /// Ends the frame in current_ (moved out or not) and starts the next.
  void next_frame();

  // Payloads from kLargeBufferFrom up to this are sized in full when their header arrives (a
  // lying header cannot make us allocate more at once); larger ones grow as their bytes arrive.
  static constexpr std::size_t kMaxReserve = 16u << 20;

  bool direct_ = false;         // current_.payload is sized in full; direct_fill_ bytes of it are in
  std::size_t direct_fill_ = 0;
  bool tail_given_ = false;     // payload_tail() gave this frame's payload out once
  std::size_t share_below_ = 0;
  std::optional<std::string> error_;
};

/// A decoded bye.
struct Bye {
  std::string reason;      ///< the sender's words
  bool permanent = false;  ///< a refusal that retrying cannot change (token, run id, version)
  std::string you;         ///< a refusal worded for the receiver ("we sent no token ..."), or ""
};
/// The payload of a bye frame: MessagePack {"reason": reason}, plus "permanent": true when set and
/// "you": the refusal as the receiver should word it, when not empty.
std::vector<std::uint8_t> encode_bye(std::string_view reason, bool permanent = false,
                                                std::string_view you = {});
/// A bye payload; reason "no reason given" for anything malformed (never throws for bad input).
Bye decode_bye(std::span<const std::uint8_t> payload);

}  // namespace ditask::detail::mesh
