// SPDX-License-Identifier: MIT
// A task with signal for the distributed RNN: predict the next character of a text (one that
// Debian ships on every system by default: the GPL 3 in base-files). docs/autograd.md.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

namespace rnn {

/// A text as token ids (its distinct bytes, in byte order, are the tokens).
class TextTask {
 public:
  /// Reads `path`. Errors: std::runtime_error when it cannot be read or has fewer than 2 tokens
  /// or fewer bytes than a sequence needs.
  TextTask(const std::string& path, std::int64_t sequence);
  /// Distinct tokens.
  std::int64_t tokens() const noexcept { return static_cast<std::int64_t>(alphabet_.size()); }
  /// `batch` sequences from random places: input (sequence, batch) and the next token of each
  /// position, the target (sequence, batch).
  std::pair<at::Tensor, at::Tensor> batch(std::int64_t batch, std::mt19937_64& rng) const;
  /// The cross-entropy of guessing each token by its frequency alone (the loss to beat), in nats.
  double unigram_entropy() const;

 private:
  std::vector<std::uint8_t> alphabet_;
  std::vector<std::int64_t> ids_;
  std::int64_t sequence_;
};

}  // namespace rnn
