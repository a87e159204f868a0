// SPDX-License-Identifier: MIT
#include "frame.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

#include "ditask/error.hpp"
#include "msgpack_reader.hpp"

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

[[noreturn]] void malformed(const std::string& why) {
  throw Error("malformed event payload: " + why);
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
  return header_ ? kHeaderSize + current_.topic.size() + current_.payload.size() : header_fill_;
}

bool FrameDecoder::fill_body(std::span<const std::uint8_t>& bytes) {
  const std::size_t topic_take =
      std::min(bytes.size(), header_->topic_bytes - current_.topic.size());
  current_.topic.append(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(topic_take));
  bytes = bytes.subspan(topic_take);
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
  if (error_) {
    out.error = error_;
    return out;
  }
  while (true) {
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
          return out;
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
        return out;
      }
      header_ = parsed.header;
      // Exact sizes, checked against the limit above: a lying header cannot make us grow further.
      current_ = Frame{
          parsed.header.type, parsed.header.flags, parsed.header.sender, parsed.header.seq, {}, {}};
      // Reserve what a lying header could cost us cheaply; larger bodies grow as bytes arrive.
      constexpr std::size_t kMaxReserve = 16u << 20;
      current_.topic.reserve(parsed.header.topic_bytes);
      current_.payload.reserve(std::min(parsed.header.payload_bytes, kMaxReserve));
    }
    if (!fill_body(bytes)) {
      break;
    }
    out.frames.push_back(std::move(current_));
    current_ = Frame{};
    header_.reset();
  }
  return out;
}

std::vector<std::uint8_t> encode_event_args(const EventArgs& args) {
  // Written as two halves of a 2-entry map, so large binary arguments are not copied into a
  // temporary {"a": ..., "k": ...} object first. to_msgpack appends to the vector.
  // One allocation for the usual event: strings and binaries dominate its size.
  std::size_t estimate = 32;
  for (const auto& a : args.args) {
    estimate += a.is_binary() ? a.get_binary().size() + 6 : a.is_string() ? a.get_ref<const std::string&>().size() + 5 : 16;
  }
  std::vector<std::uint8_t> out;
  out.reserve(estimate + (args.kwargs.empty() ? 0 : 64 * args.kwargs.size()));
  out.insert(out.end(), {0x82, 0xa1, 'a'});
  json::to_msgpack(args.args, out);
  out.insert(out.end(), {0xa1, 'k'});
  json::to_msgpack(args.kwargs, out);
  return out;
}

EventArgs decode_event_args(std::span<const std::uint8_t> payload) {
  json j;
  try {
    j = read_msgpack(payload, kMaxNesting);
  } catch (const Error& e) {
    malformed(e.what());
  }
  if (!j.is_object()) {
    malformed("expected a map, got " + std::string(j.type_name()));
  }
  auto a = j.find("a");
  auto k = j.find("k");
  if (a == j.end() || !a->is_array()) {
    malformed("expected an array 'a' of positional arguments");
  }
  if (k == j.end() || !k->is_object()) {
    malformed("expected a map 'k' of named arguments");
  }
  return EventArgs{std::move(*a), std::move(*k)};
}

std::optional<PackedPayload> locate_event_args(std::span<const std::uint8_t> payload) {
  std::size_t end = 0;
  try {
    end = skip_msgpack(payload, 0, kMaxNesting);
  } catch (const Error& e) {
    malformed(e.what());
  }
  if (end != payload.size()) {
    malformed(std::to_string(payload.size() - end) + " bytes after the value");
  }
  // Known well-formed from here on: every header read below lies inside the payload.
  auto count_at = [&](std::size_t pos, std::uint8_t fix, std::uint8_t b16, std::uint8_t b32,
                      std::size_t& count) -> std::size_t {  // header size, 0 when not this kind
    const std::uint8_t b = payload[pos];
    if ((b & 0xf0U) == fix) {
      count = b & 0x0fU;
      return 1;
    }
    const std::size_t n = b == b16 ? 2 : b == b32 ? 4 : 0;
    count = 0;
    for (std::size_t i = 0; i < n; ++i) {
      count = (count << 8) | payload[pos + 1 + i];
    }
    return n == 0 ? 0 : 1 + n;
  };
  static constexpr std::uint8_t kPrefix[] = {0x82, 0xa1, 'a'};
  if (payload.size() < 6 || !std::equal(std::begin(kPrefix), std::end(kPrefix), payload.begin())) {
    return std::nullopt;
  }
  PackedPayload p;
  const std::size_t array_header = count_at(3, 0x90, 0xdc, 0xdd, p.count);
  if (array_header == 0) {
    return std::nullopt;
  }
  p.args_begin = 3 + array_header;
  p.args_end = p.args_begin;
  for (std::size_t i = 0; i < p.count; ++i) {
    p.args_end = skip_msgpack(payload, p.args_end, kMaxNesting);
  }
  const std::size_t k = p.args_end;
  if (k + 3 > payload.size() || payload[k] != 0xa1 || payload[k + 1] != 'k' ||
      count_at(k + 2, 0x80, 0xde, 0xdf, p.named_count) == 0) {
    return std::nullopt;
  }
  return p;
}

std::vector<std::uint8_t> encode_bye(std::string_view reason, bool permanent, std::string_view you) {
  nlohmann::json j{{"reason", std::string(reason)}};
  if (permanent) {
    j["permanent"] = true;
  }
  if (!you.empty()) {
    j["you"] = std::string(you);
  }
  return nlohmann::json::to_msgpack(j);
}

Bye decode_bye(std::span<const std::uint8_t> payload) {
  constexpr std::size_t kMaxReason = 1024;
  Bye bye{"no reason given", false, {}};
  try {
    const auto j = read_msgpack(payload, 4);
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

namespace ditask::detail {
EventArgs PackedPayload::unpack() const { return mesh::decode_event_args(bytes); }
}  // namespace ditask::detail
