// SPDX-License-Identifier: MIT
// An event's bytes on their way to the channels it is sent to, and the deadline of a send.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../large_buffers.hpp"

namespace ditask::detail {

/// Topic and payload of one frame, shared (never copied) by the copies sent to several peers.
struct Body {
  std::string topic;
  std::vector<std::uint8_t> payload;
  /// Topic + payload bytes.
  std::size_t size() const noexcept { return topic.size() + payload.size(); }
};
using BodyPtr = std::shared_ptr<const Body>;

/// One event on its way to one or more channels: its topic and payload bytes, and, made on first
/// need and then shared by every channel it goes to, a Body holding them (large payloads are written
/// from it; small ones are copied into each channel's queue and need none).
class OutgoingEvent {
 public:
  /// Refers to `topic` and `payload`, which must outlive this object. `owned` (when set) is the
  /// vector holding `payload`: the Body takes it instead of a copy.
  OutgoingEvent(std::string_view topic, std::span<const std::uint8_t> payload,
                std::vector<std::uint8_t>* owned = nullptr)
      : topic_(topic), payload_(payload), owned_(owned) {}
  /// An event that already has its Body.
  explicit OutgoingEvent(BodyPtr body)
      : topic_(body->topic), payload_(body->payload), body_(std::move(body)) {}
  std::string_view topic() const noexcept { return topic_; }
  std::span<const std::uint8_t> payload() const noexcept { return payload_; }
  /// Topic + payload bytes.
  std::size_t size() const noexcept { return topic_.size() + payload_.size(); }
  /// The shared Body (copies the bytes on the first call).
  const BodyPtr& body() {
    if (!body_) {
      if (owned_) {  // a large payload given to the transport: its buffer is reused once written
        body_ = BodyPtr(new Body{std::string(topic_), std::move(*owned_)}, [](Body* body) {
          recycle_large_buffer(std::move(body->payload));
          delete body;  // NOLINT(cppcoreguidelines-owning-memory)
        });
      } else {
        body_ = std::make_shared<Body>(Body{std::string(topic_), {payload_.begin(), payload_.end()}});
      }
      payload_ = body_->payload;  // the same bytes (a moved vector keeps its buffer)
      owned_ = nullptr;
    }
    return body_;
  }

 private:
  std::string_view topic_;
  std::span<const std::uint8_t> payload_;
  std::vector<std::uint8_t>* owned_ = nullptr;
  BodyPtr body_;
};

/// A send deadline that reads the clock only when someone has to wait.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  /// Now + the timeout, fixed by the first call.
  std::chrono::steady_clock::time_point at() {
    if (at_ == kUnset) {
      at_ = std::chrono::steady_clock::now() + timeout_;
    }
    return at_;
  }

 private:
  // Not a std::optional: GCC 12 at -O2 takes its engaged flag for "maybe uninitialized" once
  // the deadline is passed through the engine's templates (a false positive, and the release
  // build allows no warning).
  static constexpr std::chrono::steady_clock::time_point kUnset = std::chrono::steady_clock::time_point::min();
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point at_ = kUnset;
};

}  // namespace ditask::detail
