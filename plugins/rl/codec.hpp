// SPDX-License-Identifier: MIT
// Binary payloads of the RL examples, carried as std::vector<std::uint8_t> event arguments (raw
// MessagePack bin on the wire, never JSON arrays of numbers). Every integer and float is
// little-endian; each payload starts with a 4-byte magic and a version of the policy it came from.
//   weights:      "RLW1" u32 version, u32 count, count x f32
//   trajectory:   "RLT1" u32 version, u64 mask seed, u32 steps, steps x (4 x f32 state, u8 action),
//                 steps x f32 reward
//   transitions:  "RLX1" u32 version, u32 count, count x (4 x f32 s, u8 a, f32 r, 4 x f32 s', u8 done)
// Decoders check sizes and magic. Errors: std::runtime_error "malformed <what>: ...".
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

namespace rl {

using Bytes = std::vector<std::uint8_t>;

/// Policy parameters and the learner's update count they come from.
struct Weights {
  std::uint32_t version = 0;
  Eigen::VectorXf params;
};
Bytes encode_weights(const Weights& w);
Weights decode_weights(const Bytes& bytes);

/// One episode as a collector ran it.
struct Trajectory {
  std::uint32_t version = 0;    ///< of the weights it ran with
  std::uint64_t mask_seed = 0;  ///< seed of the dropout masks the policy drew, step by step
  std::vector<std::array<float, 4>> states;
  std::vector<std::uint8_t> actions;
  std::vector<float> rewards;
};
Bytes encode_trajectory(const Trajectory& t);
Trajectory decode_trajectory(const Bytes& bytes);

/// One environment step for a replay buffer.
struct Transition {
  std::array<float, 4> state{};
  std::uint8_t action = 0;
  float reward = 0;
  std::array<float, 4> next{};
  bool done = false;  ///< terminated (not truncated): no bootstrap from `next`
};
Bytes encode_transitions(std::uint32_t version, const std::vector<Transition>& ts);
std::vector<Transition> decode_transitions(const Bytes& bytes, std::uint32_t* version = nullptr);

}  // namespace rl
