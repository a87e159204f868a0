// SPDX-License-Identifier: MIT
// How a Link batches what it writes and when it acknowledges what it read (connection*.cpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace ditask::detail::mesh::link_limits {

constexpr std::size_t kMaxBatchFrames = 4096;       ///< frames in one write
constexpr std::size_t kMaxBatchBytes = 4u << 20;    ///< bytes in one write (about)
constexpr std::size_t kStageBelow = 16 * 1024;      ///< payloads up to this size are copied, not shared
constexpr std::size_t kFramesChunk = 256 * 1024;    ///< a run of copied frames grows up to about this
constexpr std::size_t kSpareBuffers = 16;           ///< emptied runs kept for reuse
constexpr std::size_t kInlineIovecs = 64;           ///< iovecs per sendmsg of an inline write
/// An ack goes alone (no frame to ride on) at most about twice this long after the read that
/// brought the events it acknowledges; at once while the peer waits for it (it sent a ping).
/// Each tick wakes the io thread: ticks are rare so a round trip costs no extra context switch.
constexpr std::chrono::milliseconds kAckDelay{50};
/// While acks keep riding on frames written anyway, each tick finds nothing to send and the next
/// one comes twice as late, up to this (a steady exchange then wakes the io thread 5 times a
/// second, not 20); a tick that sends an ack alone starts again at kAckDelay. So when traffic
/// stops, its last ack goes alone at most about twice this long after it was due.
constexpr std::chrono::milliseconds kAckDelayRiding{200};
/// A long stream is acknowledged at least every this many handled events.
constexpr std::uint64_t kAckEvery = 4096;

}  // namespace ditask::detail::mesh::link_limits
