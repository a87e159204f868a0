// SPDX-License-Identifier: MIT
#include "tfrecord.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include <boost/crc.hpp>

namespace ditask::detail {
namespace {

// Protobuf wire types.
constexpr std::uint32_t kVarint = 0;
constexpr std::uint32_t kFixed64 = 1;
constexpr std::uint32_t kLengthDelimited = 2;
constexpr std::uint32_t kFixed32 = 5;

constexpr int kHistogramBuckets = 30;

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void put_key(std::string& out, std::uint32_t field, std::uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }

template <typename Word>
void put_little_endian(std::string& out, Word word) {
  for (std::size_t i = 0; i < sizeof(Word); ++i) {
    out += static_cast<char>((word >> (8 * i)) & 0xff);
  }
}

// proto3: a field that holds its default (0, empty) is not written, outside a oneof.
void put_double(std::string& out, std::uint32_t field, double value) {
  if (value == 0.0) {
    return;
  }
  put_key(out, field, kFixed64);
  put_little_endian(out, std::bit_cast<std::uint64_t>(value));
}

void put_bytes(std::string& out, std::uint32_t field, std::string_view bytes, bool in_oneof = false) {
  if (bytes.empty() && !in_oneof) {
    return;
  }
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

void put_packed_doubles(std::string& out, std::uint32_t field, const std::vector<double>& values) {
  std::string packed;
  for (double v : values) {
    put_little_endian(packed, std::bit_cast<std::uint64_t>(v));
  }
  put_bytes(out, field, packed);
}

/// Event{wall_time = 1, step = 2, summary = 5}, Summary{value = 1} around one Summary.Value.
std::string summary_event(double wall_time, std::int64_t step, const std::string& summary_value) {
  std::string summary;
  put_bytes(summary, 1, summary_value);
  std::string event;
  put_double(event, 1, wall_time);
  if (step != 0) {
    put_key(event, 2, kVarint);
    put_varint(event, static_cast<std::uint64_t>(step));  // int64: negative steps as ten bytes, as protobuf does
  }
  put_bytes(event, 5, summary, true);
  return event;
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

std::uint32_t masked_crc32c(std::string_view bytes) {
  const std::uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string length;
  put_little_endian(length, static_cast<std::uint64_t>(data.size()));
  std::string out = length;
  put_little_endian(out, masked_crc32c(length));
  out += data;
  put_little_endian(out, masked_crc32c(data));
  return out;
}

std::string file_version_event(double wall_time) {
  std::string event;
  put_double(event, 1, wall_time);
  put_bytes(event, 3, "brain.Event:2", true);
  return event;
}

std::string scalar_event(double wall_time, std::int64_t step, std::string_view tag, float value) {
  std::string v;
  put_bytes(v, 1, tag);  // Summary.Value.tag = 1
  put_key(v, 2, kFixed32);  // simple_value = 2, in a oneof: written even when 0
  put_little_endian(v, std::bit_cast<std::uint32_t>(value));
  return summary_event(wall_time, step, v);
}

std::string histogram_event(double wall_time, std::int64_t step, std::string_view tag, std::span<const double> values) {
  double low = 0;
  double high = 0;
  double sum = 0;
  double squares = 0;
  if (!values.empty()) {
    const auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
    low = *min_it;
    high = *max_it;
  }
  for (double x : values) {
    sum += x;
    squares += x * x;
  }
  // Right edges of equal-width buckets; one bucket when every value is the same.
  const int buckets = high > low ? kHistogramBuckets : 1;
  std::vector<double> limits(static_cast<std::size_t>(buckets));
  std::vector<double> counts(static_cast<std::size_t>(buckets), 0.0);
  const double width = (high - low) / buckets;
  for (int b = 0; b < buckets; ++b) {
    limits[static_cast<std::size_t>(b)] = b + 1 == buckets ? high : low + width * (b + 1);
  }
  for (double x : values) {  // TensorBoard's rule: bucket i holds limit[i-1] < x <= limit[i]
    const auto at = std::lower_bound(limits.begin(), limits.end(), x);
    counts[static_cast<std::size_t>(std::min<std::ptrdiff_t>(at - limits.begin(), buckets - 1))] += 1;
  }
  std::string histo;  // HistogramProto
  put_double(histo, 1, low);
  put_double(histo, 2, high);
  put_double(histo, 3, static_cast<double>(values.size()));
  put_double(histo, 4, sum);
  put_double(histo, 5, squares);
  put_packed_doubles(histo, 6, limits);
  put_packed_doubles(histo, 7, counts);
  std::string v;
  put_bytes(v, 1, tag);
  put_bytes(v, 5, histo, true);  // Summary.Value.histo = 5
  return summary_event(wall_time, step, v);
}

}  // namespace ditask::detail
