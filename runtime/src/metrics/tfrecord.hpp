// SPDX-License-Identifier: MIT
// TensorBoard's event files, byte by byte: TFRecord framing with masked CRC32C, and the protobuf
// encoding of the few `Event` and `Summary` fields ditask writes (tensorflow/core/util/event.proto,
// tensorflow/core/framework/summary.proto), hand-encoded: no protobuf library at build time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ditask::detail {

/// CRC-32C (Castagnoli) of `bytes`, by Boost.CRC.
std::uint32_t crc32c(std::string_view bytes);
/// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t masked_crc32c(std::string_view bytes);
/// One TFRecord: length (u64 LE), its masked CRC (u32 LE), `data`, the data's masked CRC.
std::string tfrecord(std::string_view data);

/// An Event{wall_time, file_version: "brain.Event:2"}: every event file's first record.
std::string file_version_event(double wall_time);
/// An Event{wall_time, step, summary{value{tag, simple_value}}}.
std::string scalar_event(double wall_time, std::int64_t step, std::string_view tag, float value);
/// An Event{wall_time, step, summary{value{tag, histo}}} of `values` (30 equal-width buckets).
std::string histogram_event(double wall_time, std::int64_t step, std::string_view tag,
                            std::span<const double> values);

}  // namespace ditask::detail
