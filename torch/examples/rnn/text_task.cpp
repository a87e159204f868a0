// SPDX-License-Identifier: MIT
#include "text_task.hpp"

#include <ATen/ATen.h>

#include <array>
#include <cmath>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace rnn {

TextTask::TextTask(const std::string& path, std::int64_t sequence) : sequence_(sequence) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("rnn: cannot read the text " + path + " (text=<path> picks another)");
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::array<std::int64_t, 256> id{};
  id.fill(-1);
  for (const char c : bytes) {
    const auto b = static_cast<std::uint8_t>(c);
    if (id[b] < 0) {
      id[b] = 0;
    }
  }
  for (int b = 0; b < 256; ++b) {
    if (id[static_cast<std::size_t>(b)] >= 0) {
      id[static_cast<std::size_t>(b)] = static_cast<std::int64_t>(alphabet_.size());
      alphabet_.push_back(static_cast<std::uint8_t>(b));
    }
  }
  for (const char c : bytes) {
    ids_.push_back(id[static_cast<std::uint8_t>(c)]);
  }
  if (alphabet_.size() < 2 || static_cast<std::int64_t>(ids_.size()) < sequence + 2) {
    throw std::runtime_error("rnn: the text " + path + " is too short to learn from");
  }
}

std::pair<at::Tensor, at::Tensor> TextTask::batch(std::int64_t batch, std::mt19937_64& rng) const {
  at::Tensor input = at::empty({sequence_, batch}, at::kLong);
  at::Tensor target = at::empty({sequence_, batch}, at::kLong);
  auto in = input.accessor<std::int64_t, 2>();
  auto out = target.accessor<std::int64_t, 2>();
  std::uniform_int_distribution<std::size_t> start(0, ids_.size() - static_cast<std::size_t>(sequence_) - 2);
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::size_t at = start(rng);
    for (std::int64_t t = 0; t < sequence_; ++t) {
      in[t][b] = ids_[at + static_cast<std::size_t>(t)];
      out[t][b] = ids_[at + static_cast<std::size_t>(t) + 1];
    }
  }
  return {input, target};
}

double TextTask::unigram_entropy() const {
  std::vector<double> counts(alphabet_.size(), 0.0);
  for (const auto id : ids_) {
    counts[static_cast<std::size_t>(id)] += 1;
  }
  double entropy = 0;
  for (const double c : counts) {
    const double p = c / static_cast<double>(ids_.size());
    entropy -= p * std::log(p);
  }
  return entropy;
}

}  // namespace rnn
