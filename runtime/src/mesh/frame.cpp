// SPDX-License-Identifier: MIT
#include "frame.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <mutex>
#include <utility>

#include "ditask/error.hpp"
#include "../codec/json_msgpack.hpp"
#include "../large_buffers.hpp"

namespace ditask::detail::mesh {
namespace {

constexpr std::array<std::uint8_t, 4> kMagic{'D', 'T', 'S', 'K'};

template <class T>
void put_le(std::uint8_t* out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
}

template <class T>
T get_le(const std::uint8_t* in) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value = static_cast<T>(value | static_cast<T>(static_cast<T>(in[i]) << (8 * i)));
  }
  return value;
}

std::string hex(std::uint64_t value) {
  std::array<char, 16> digits{};
  const auto end = std::to_chars(digits.begin(), digits.end(), value, 16).ptr;
  return "0x" + std::string(digits.begin(), end);
}

std::optional<std::string> magic_error(const std::uint8_t* p) {
  if (std::equal(kMagic.begin(), kMagic.end(), p)) {
    return std::nullopt;
  }
  return "bad magic " + hex(get_le<std::uint32_t>(p)) + " (not a ditask peer?)";
}


}  // namespace

FrameHeader header_of(const Frame& frame) noexcept {
  return FrameHeader{frame.type, frame.flags,        frame.sender,
                     frame.seq,  frame.topic.size(), frame.payload.size()};
}

std::array<std::uint8_t, kHeaderSize> encode_header(const FrameHeader& header) {
  if (header.topic_bytes > kMaxTopicBytes || header.payload_bytes > kMaxPayloadBytes) {
    const bool topic = header.topic_bytes > kMaxTopicBytes;
    throw Error(std::string(topic ? "topic" : "payload") + " of " +
                std::to_string(topic ? header.topic_bytes : header.payload_bytes) +
                " bytes is too long for a frame (at most " +
                std::to_string(topic ? kMaxTopicBytes : kMaxPayloadBytes) + ")");
  }
  std::array<std::uint8_t, kHeaderSize> out{};
  std::copy(kMagic.begin(), kMagic.end(), out.begin());
  out[4] = kWireVersion;
  out[5] = static_cast<std::uint8_t>(header.type);
  put_le(out.data() + 6, header.flags);
  put_le(out.data() + 8, header.sender);
  put_le(out.data() + 16, header.seq);
  put_le(out.data() + 24, static_cast<std::uint16_t>(header.topic_bytes));
  put_le(out.data() + 26, std::uint16_t{0});
  put_le(out.data() + 28, static_cast<std::uint32_t>(header.payload_bytes));
  return out;
}

std::vector<std::uint8_t> encode(const Frame& frame) {
  const auto header = encode_header(header_of(frame));
  std::vector<std::uint8_t> out;
  out.reserve(kHeaderSize + frame.topic.size() + frame.payload.size());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), frame.topic.begin(), frame.topic.end());
  out.insert(out.end(), frame.payload.begin(), frame.payload.end());
  return out;
}

HeaderResult decode_header(std::span<const std::uint8_t, kHeaderSize> bytes,
                           std::size_t max_frame_bytes) {
  HeaderResult r;
  const std::uint8_t* p = bytes.data();
  if (auto bad = magic_error(p)) {
    r.error = std::move(bad);
    return r;
  }
  if (p[4] != kWireVersion) {
    r.error = "unsupported wire version " + std::to_string(p[4]) + " (this build speaks " +
              std::to_string(kWireVersion) + ")";
    return r;
  }
  if (p[5] < static_cast<std::uint8_t>(FrameType::hello) ||
      p[5] > static_cast<std::uint8_t>(FrameType::welcome)) {
    r.error = "unknown frame type " + std::to_string(p[5]);
    return r;
  }
  if (const auto reserved = get_le<std::uint16_t>(p + 26); reserved != 0) {
    r.error = "nonzero reserved header field " + hex(reserved);
    return r;
  }
  r.header.type = static_cast<FrameType>(p[5]);
  r.header.flags = get_le<std::uint16_t>(p + 6);
  r.header.sender = get_le<std::uint64_t>(p + 8);
  r.header.seq = get_le<std::uint64_t>(p + 16);
  r.header.topic_bytes = get_le<std::uint16_t>(p + 24);
  r.header.payload_bytes = get_le<std::uint32_t>(p + 28);
  const std::uint64_t body = std::uint64_t{r.header.topic_bytes} + r.header.payload_bytes;
  if (body > max_frame_bytes) {
    r.error = "frame of " + std::to_string(body) + " bytes exceeds the limit of " +
              std::to_string(max_frame_bytes) + " bytes";
  }
  return r;
}

FrameDecoder::FrameDecoder(std::size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

std::size_t FrameDecoder::buffered() const noexcept {
  const std::size_t payload = direct_ ? direct_fill_ : current_.payload.size();
  return header_ ? kHeaderSize + current_.topic.size() + payload : header_fill_;
}

void FrameDecoder::next_frame() {
  current_ = Frame{};
  header_.reset();
  direct_ = false;
  direct_fill_ = 0;
  tail_given_ = false;
}

std::span<std::uint8_t> FrameDecoder::payload_tail(std::size_t min, std::size_t max_direct) {
  if (error_ || !header_ || current_.topic.size() != header_->topic_bytes) {
    return {};
  }
  const std::size_t missing = header_->payload_bytes - direct_fill_;
  if (!direct_ || header_->payload_bytes > max_direct || (missing < min && !tail_given_)) {
    return {};
  }
  tail_given_ = true;  // the rest of this payload is read in place too, however little is left
  return {current_.payload.data() + direct_fill_, missing};
}

DecodeResult FrameDecoder::filled(std::size_t n) {
  DecodeResult out;
  filled(n, out);
  return out;
}

void FrameDecoder::filled(std::size_t n, DecodeResult& out) {
  out.frames.clear();
  out.error.reset();
  direct_fill_ += n;
  if (direct_ && direct_fill_ == header_->payload_bytes) {
    out.frames.push_back(std::move(current_));
    next_frame();
  }
}

bool FrameDecoder::fill_body(std::span<const std::uint8_t>& bytes) {
  const std::size_t topic_take =
      std::min(bytes.size(), header_->topic_bytes - current_.topic.size());
  current_.topic.append(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(topic_take));
  bytes = bytes.subspan(topic_take);
  if (direct_) {  // sized in full already: the bytes go to their place
    const std::size_t take = std::min(bytes.size(), header_->payload_bytes - direct_fill_);
    if (take > 0) {
      std::memcpy(current_.payload.data() + direct_fill_, bytes.data(), take);
    }
    direct_fill_ += take;
    bytes = bytes.subspan(take);
    return current_.topic.size() == header_->topic_bytes && direct_fill_ == header_->payload_bytes;
  }
  const std::size_t payload_take =
      std::min(bytes.size(), header_->payload_bytes - current_.payload.size());
  current_.payload.insert(current_.payload.end(), bytes.begin(),
                          bytes.begin() + static_cast<std::ptrdiff_t>(payload_take));
  bytes = bytes.subspan(payload_take);
  return current_.topic.size() == header_->topic_bytes &&
         current_.payload.size() == header_->payload_bytes;
}

DecodeResult FrameDecoder::feed(std::span<const std::uint8_t> bytes) {
  DecodeResult out;
  feed(bytes, out);
  return out;
}

namespace {

// Full-size payload chunks (FrameDecoder::share_small_payloads), kept for reuse once their last
// event is gone: a stream's reads then fill warm memory, not fresh pages (each a page fault and
// a zeroing). At most kKept are kept. Thread: any (the io threads take, dispatchers give back).
class PayloadChunkRecycler {
 public:
  static constexpr std::size_t kChunk = 32 * 1024;
  static constexpr std::size_t kKept = 64;
  PayloadChunkRecycler() { free_.reserve(kKept); }
  std::shared_ptr<std::uint8_t[]> take() {
    std::uint8_t* raw = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        raw = free_.back();
        free_.pop_back();
      }
    }
    if (raw == nullptr) {
      raw = new std::uint8_t[kChunk];  // not zeroed: every byte read was written first
    }
    return {raw, [this](std::uint8_t* p) { give_back(p); }};
  }

 private:
  void give_back(std::uint8_t* p) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (free_.size() < kKept) {
        free_.push_back(p);  // reserved: never allocates
        return;
      }
    }
    delete[] p;
  }
  std::mutex mutex_;
  std::vector<std::uint8_t*> free_;  // guarded by mutex_
};

// Never destroyed: a chunk may be given back by a thread still running at exit.
PayloadChunkRecycler& payload_chunks() {
  static auto* recycler = new PayloadChunkRecycler;  // NOLINT(cppcoreguidelines-owning-memory)
  return *recycler;
}

}  // namespace

bool FrameDecoder::take_whole_shared(std::span<const std::uint8_t>& bytes, std::shared_ptr<std::uint8_t[]>& chunk,
                                     std::size_t& chunk_used, std::size_t& chunk_size, DecodeResult& out) {
  if (bytes.size() < kHeaderSize || bytes[5] != static_cast<std::uint8_t>(FrameType::event)) {
    return false;
  }
  const auto parsed = decode_header(bytes.first<kHeaderSize>(), max_frame_bytes_);
  if (parsed.error) {
    return false;  // the ordinary path reports it
  }
  const FrameHeader& h = parsed.header;
  const std::size_t whole = kHeaderSize + h.topic_bytes + h.payload_bytes;
  if (h.payload_bytes > share_below_ || bytes.size() < whole) {
    return false;
  }
  if (!chunk || chunk_size - chunk_used < h.payload_bytes) {
    // What is left of the read bounds the payloads still in it; a chunk is at most 32 KiB, so
    // an event kept for long keeps little else alive with it. A long read (a stream) takes a
    // recycled full-size one.
    constexpr std::size_t kMaxChunk = PayloadChunkRecycler::kChunk;
    if (bytes.size() >= kMaxChunk && h.payload_bytes <= kMaxChunk) {
      chunk = payload_chunks().take();
      chunk_size = kMaxChunk;
    } else {
      chunk_size = std::max<std::size_t>(std::min(bytes.size(), kMaxChunk), h.payload_bytes);
      chunk = std::make_shared_for_overwrite<std::uint8_t[]>(chunk_size);
    }
    chunk_used = 0;
  }
  const auto* topic = reinterpret_cast<const char*>(bytes.data() + kHeaderSize);
  Frame& f = out.frames.emplace_back();
  f.type = h.type;
  f.flags = h.flags;
  f.sender = h.sender;
  f.seq = h.seq;
  f.topic.assign(topic, h.topic_bytes);
  std::memcpy(chunk.get() + chunk_used, bytes.data() + kHeaderSize + h.topic_bytes, h.payload_bytes);
  f.shared = std::shared_ptr<const std::uint8_t>(chunk, chunk.get() + chunk_used);
  f.shared_size = h.payload_bytes;
  chunk_used += h.payload_bytes;
  bytes = bytes.subspan(whole);
  return true;
}

void FrameDecoder::feed(std::span<const std::uint8_t> bytes, DecodeResult& out) {
  out.frames.clear();
  out.error.reset();
  if (error_) {
    out.error = error_;
    return;
  }
  std::shared_ptr<std::uint8_t[]> chunk;  // this read's buffer for small payloads
  std::size_t chunk_used = 0;
  std::size_t chunk_size = 0;
  while (true) {
    if (!header_ && header_fill_ == 0 && share_below_ > 0 &&
        take_whole_shared(bytes, chunk, chunk_used, chunk_size, out)) {
      continue;
    }
    if (!header_) {
      if (bytes.empty()) {
        break;
      }
      const std::size_t take = std::min(bytes.size(), kHeaderSize - header_fill_);
      std::copy_n(bytes.begin(), take, header_bytes_.data() + header_fill_);
      // Check the magic as soon as it is complete: a stray client is refused at once.
      if (header_fill_ < kMagic.size() && header_fill_ + take >= kMagic.size()) {
        if (auto bad = magic_error(header_bytes_.data())) {
          error_ = std::move(bad);
          out.error = error_;
          return;
        }
      }
      header_fill_ += take;
      bytes = bytes.subspan(take);
      if (header_fill_ < kHeaderSize) {
        break;
      }
      header_fill_ = 0;
      auto parsed = decode_header(header_bytes_, max_frame_bytes_);
      if (parsed.error) {
        error_ = std::move(parsed.error);
        out.error = error_;
        return;
      }
      header_ = parsed.header;
      // Exact sizes, checked against the limit above: a lying header cannot make us grow further.
      current_ = Frame{
          parsed.header.type, parsed.header.flags, parsed.header.sender, parsed.header.seq, {}, {}};
      // Reserve what a lying header could cost us cheaply; larger bodies grow as bytes arrive.
      current_.topic.reserve(parsed.header.topic_bytes);
      if (parsed.header.payload_bytes >= kLargeBufferFrom && parsed.header.payload_bytes <= kMaxReserve) {
        // Sized in full at once, in a kept buffer when one fits: no zeroing, no fresh pages.
        current_.payload = large_buffer_of_size(parsed.header.payload_bytes);
        direct_ = true;
      } else {
        current_.payload.reserve(std::min(parsed.header.payload_bytes, kMaxReserve));
      }
    }
    if (!fill_body(bytes)) {
      break;
    }
    out.frames.push_back(std::move(current_));
    next_frame();
  }
}

std::vector<std::uint8_t> encode_bye(std::string_view reason, bool permanent, std::string_view you) {
  std::vector<std::uint8_t> out;
  Packer p(out);
  p.map(std::size_t{1} + (permanent ? 1U : 0U) + (you.empty() ? 0U : 1U));
  p.string("reason");
  p.string(reason);
  if (permanent) {
    p.string("permanent");
    p.value(true);
  }
  if (!you.empty()) {
    p.string("you");
    p.string(you);
  }
  return out;
}

Bye decode_bye(std::span<const std::uint8_t> payload) {
  constexpr std::size_t kMaxReason = 1024;
  Bye bye{"no reason given", false, {}};
  try {
    const auto j = codec::read_json(payload, 4);
    if (j.is_object() && j.contains("reason") && j.at("reason").is_string()) {
      bye.reason = j.at("reason").get<std::string>();
      if (bye.reason.size() > kMaxReason) {
        bye.reason.resize(kMaxReason);
      }
      bye.permanent = j.contains("permanent") && j.at("permanent").is_boolean() && j.at("permanent").get<bool>();
      if (j.contains("you") && j.at("you").is_string()) {
        bye.you = j.at("you").get<std::string>();
        if (bye.you.size() > kMaxReason) {
          bye.you.resize(kMaxReason);
        }
      }
    }
  } catch (const std::exception&) {
  }
  return bye;
}

}  // namespace ditask::detail::mesh

