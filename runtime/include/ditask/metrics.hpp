// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "ditask/export.hpp"

namespace ditask {

/// Training curves for TensorBoard. With `ditask --metrics-dir DIR` each worker writes what it
/// records to `DIR/node-<id>/events.out.tfevents.<time>.<host>.<pid>` (TensorBoard's event file:
/// TFRecord framing, masked CRC32C, `Event` and `Summary` messages); `tensorboard --logdir DIR`
/// shows one run per node. A plain process writes where DITASK_METRICS_DIR says. Without either,
/// nothing is recorded and each call returns at once. Each record is written with one write(2)
/// when it is recorded, so a worker that crashes loses none it recorded. Thread: any.
class DITASK_API Metrics {
 public:
  /// Records `value` of the curve `tag` ("reward", "train/loss") at `step`. TensorBoard keeps it
  /// as a 32-bit float. Never throws: a failed write is logged once and later ones are dropped.
  void scalar(std::string_view tag, std::int64_t step, double value);
  /// Records the distribution of `values` at `step` as a TensorBoard histogram (30 buckets of
  /// equal width between their minimum and maximum; min, max, count, sum and sum of squares).
  void histogram(std::string_view tag, std::int64_t step, std::span<const double> values);
  /// True when recorded values go to a file.
  bool enabled() const noexcept;
};

/// The process's metrics.
DITASK_API Metrics& metrics();

}  // namespace ditask
