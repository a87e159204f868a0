// SPDX-License-Identifier: MIT
// TensorBoard's event file encoding: CRC-32C, TFRecord framing and the Event messages, byte by byte.
#include "metrics/tfrecord.hpp"

#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

using namespace std::string_literals;

namespace {

std::uint32_t u32_at(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  }
  return v;
}

}  // namespace

TEST_CASE("tfrecord: CRC-32C and its mask are TensorFlow's", "[metrics]") {
  CHECK(ditask::detail::crc32c("123456789") == 0xE3069283u);  // the Castagnoli check value
  CHECK(ditask::detail::crc32c("") == 0u);
  const std::uint32_t crc = 0xE3069283u;
  CHECK(ditask::detail::masked_crc32c("123456789") == ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST_CASE("tfrecord: a record is length, its masked CRC, the data and the data's masked CRC", "[metrics]") {
  const std::string record = ditask::detail::tfrecord("abc");
  REQUIRE(record.size() == 8 + 4 + 3 + 4);
  CHECK(record.substr(0, 8) == "\x03\0\0\0\0\0\0\0"s);
  CHECK(u32_at(record, 8) == ditask::detail::masked_crc32c(record.substr(0, 8)));
  CHECK(record.substr(12, 3) == "abc");
  CHECK(u32_at(record, 15) == ditask::detail::masked_crc32c("abc"));
}

TEST_CASE("tfrecord: events are encoded as protobuf writes them (proto3: defaults left out)", "[metrics]") {
  // Event{wall_time = 1.5 (field 1, fixed64), file_version = "brain.Event:2" (field 3)}.
  CHECK(ditask::detail::file_version_event(1.5) == "\x09\0\0\0\0\0\0\xf8\x3f\x1a\x0d"s + "brain.Event:2");
  // Event{wall_time 1.5, step 3 (field 2, varint), summary (5){value (1){tag "x" (1), simple_value 2.0f (2, fixed32)}}}.
  CHECK(ditask::detail::scalar_event(1.5, 3, "x", 2.0f) ==
        "\x09\0\0\0\0\0\0\xf8\x3f\x10\x03\x2a\x0a\x0a\x08\x0a\x01x\x15\0\0\0\x40"s);
  // Step 0 is the default: not written. A simple value of 0 is in a oneof: written.
  CHECK(ditask::detail::scalar_event(1.5, 0, "x", 0.0f) == "\x09\0\0\0\0\0\0\xf8\x3f\x2a\x0a\x0a\x08\x0a\x01x\x15\0\0\0\0"s);
  // A negative step is an int64 varint of ten bytes.
  const std::string negative = ditask::detail::scalar_event(1.5, -1, "x", 1.0f);
  CHECK(negative.substr(9, 11) == "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"s);
}

TEST_CASE("tfrecord: a histogram of one repeated value has one bucket", "[metrics]") {
  const std::vector<double> values(4, 2.0);
  const std::string event = ditask::detail::histogram_event(1.5, 1, "h", values);
  // HistogramProto: min 2 (1), max 2 (2), num 4 (3), sum 8 (4), sum_squares 16 (5), limits {2} (6), counts {4} (7).
  const std::string histo = "\x09\0\0\0\0\0\0\0\x40"s + "\x11\0\0\0\0\0\0\0\x40"s + "\x19\0\0\0\0\0\0\x10\x40"s +
                            "\x21\0\0\0\0\0\0\x20\x40"s + "\x29\0\0\0\0\0\0\x30\x40"s + "\x32\x08\0\0\0\0\0\0\0\x40"s +
                            "\x3a\x08\0\0\0\0\0\0\x10\x40"s;
  CHECK(event.find(histo) != std::string::npos);
}
