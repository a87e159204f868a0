// SPDX-License-Identifier: MIT
// Known values through ditask::metrics(), for the test that reads TensorBoard's files back.
#include <cstdint>
#include <iostream>
#include <vector>

#include <ditask/ditask.hpp>

// Node n records "value" = n + step / 4 at steps 0..99 (exact as floats), "train/loss" at
// steps -2, 0 and 2^40, and a histogram of 0..9 at step 7; then prints "recorded".
DITASK_MAIN(known_values) {
  auto& m = ditask::metrics();
  if (!m.enabled()) {
    throw std::runtime_error("metrics are not enabled (no --metrics-dir)");
  }
  const auto node = static_cast<double>(ditask::task().router().node_id());
  for (std::int64_t step = 0; step < 100; ++step) {
    m.scalar("value", step, node + static_cast<double>(step) / 4);
  }
  m.scalar("train/loss", -2, 0.5);
  m.scalar("train/loss", 0, -1.25);
  m.scalar("train/loss", std::int64_t{1} << 40, 3.0);
  std::vector<double> values;
  for (int i = 0; i < 10; ++i) {
    values.push_back(i);
  }
  m.histogram("weights", 7, values);
  std::cout << "recorded" << std::endl;
}
