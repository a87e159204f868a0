// SPDX-License-Identifier: MIT
// A small seeded random number generator whose stream is the same on every platform and
// standard library (std::uniform_real_distribution is not), so a job is reproducible from its
// seed: SplitMix64, with uniform doubles from the top 53 bits.
#pragma once

#include <cstdint>

namespace rl {

/// Thread: one owner.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) noexcept : state_(seed) {}

  /// The next 64 random bits.
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n), n > 0.
  std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

  /// A seed for a stream of its own, from a base seed and up to three indices (node, round, ...).
  static std::uint64_t derive(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0) noexcept {
    Rng r(seed ^ (a * 0xD1B54A32D192ED03ULL) ^ (b * 0xABC98388FB8FAC03ULL) ^ (c * 0x8CB92BA72F3D8DD7ULL));
    r.next();
    return r.next();
  }

 private:
  std::uint64_t state_;
};

}  // namespace rl
