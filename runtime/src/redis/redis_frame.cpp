// SPDX-License-Identifier: MIT
#include "redis_frame.hpp"

#include <cstring>
#include <stdexcept>

namespace ditask::detail::redis {

namespace {

void put_u64(std::uint8_t* at, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) {
    at[i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
}

std::uint64_t get_u64(const std::uint8_t* at) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<std::uint64_t>(at[i]) << (8 * i);
  }
  return v;
}

}  // namespace

void encode_frame(std::vector<std::uint8_t>& out, FrameKind kind, bool failed, std::int64_t sender,
                  std::uint64_t instance, std::uint64_t to, std::uint64_t seq, std::string_view topic,
                  std::span<const std::uint8_t> payload) {
  if (topic.size() > 0xffff) {
    throw std::length_error("event name longer than 65535 bytes");
  }
  out.resize(kFrameHeaderBytes + topic.size() + payload.size());
  std::uint8_t* at = out.data();
  at[0] = static_cast<std::uint8_t>(kind);
  at[1] = failed ? 1 : 0;
  put_u64(at + 2, static_cast<std::uint64_t>(sender));
  put_u64(at + 10, instance);
  put_u64(at + 18, to);
  put_u64(at + 26, seq);
  at[34] = static_cast<std::uint8_t>(topic.size());
  at[35] = static_cast<std::uint8_t>(topic.size() >> 8);
  if (!topic.empty()) {
    std::memcpy(at + kFrameHeaderBytes, topic.data(), topic.size());
  }
  if (!payload.empty()) {
    std::memcpy(at + kFrameHeaderBytes + topic.size(), payload.data(), payload.size());
  }
}

std::optional<FrameView> decode_frame(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kFrameHeaderBytes) {
    return std::nullopt;
  }
  const std::uint8_t* at = bytes.data();
  if (at[0] < 1 || at[0] > 6 || at[1] > 1) {
    return std::nullopt;
  }
  const std::size_t topic_size = at[34] | (static_cast<std::size_t>(at[35]) << 8);
  if (kFrameHeaderBytes + topic_size > bytes.size()) {
    return std::nullopt;
  }
  FrameView f;
  f.kind = static_cast<FrameKind>(at[0]);
  f.failed = at[1] == 1;
  f.sender = static_cast<std::int64_t>(get_u64(at + 2));
  f.instance = get_u64(at + 10);
  f.to = get_u64(at + 18);
  f.seq = get_u64(at + 26);
  f.topic = std::string_view(reinterpret_cast<const char*>(at + kFrameHeaderBytes), topic_size);
  f.payload = bytes.subspan(kFrameHeaderBytes + topic_size);
  return f;
}

void SendWindow::sent(std::uint64_t seq, std::size_t bytes) {
  unread_.emplace_back(seq, bytes);
  unread_bytes_ += bytes;
}

std::size_t SendWindow::read_up_to(std::uint64_t seq) noexcept {
  std::size_t read = 0;
  while (!unread_.empty() && unread_.front().first <= seq) {
    unread_bytes_ -= unread_.front().second;
    unread_.pop_front();
    ++read;
  }
  return read;
}

void SendWindow::clear() noexcept {
  unread_.clear();
  unread_bytes_ = 0;
}

SequenceCheck::Outcome SequenceCheck::on_event(std::uint64_t seq) noexcept {
  if (seq <= last_) {
    return {};  // seen (or given up for lost) already
  }
  Outcome out{true, seq - last_ - 1};
  last_ = seq;
  return out;
}

std::uint64_t SequenceCheck::on_sent_so_far(std::uint64_t last) noexcept {
  if (last <= last_) {
    return 0;
  }
  const auto missing = last - last_;
  last_ = last;
  return missing;
}

}  // namespace ditask::detail::redis
