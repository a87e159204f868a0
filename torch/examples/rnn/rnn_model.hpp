// SPDX-License-Identifier: MIT
// The PyTorch RPC tutorial's distributed RNN ("Distributed RNN using Distributed Autograd and
// Distributed Optimizer"): the embedding table and the decoder live on a parameter server as
// remote objects, the LSTM on the trainer. docs/autograd.md "The example".
#pragma once

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include <ditask/torch.hpp>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>

namespace rnn {

/// The tutorial's sizes.
struct Sizes {
  std::int64_t ntoken = 10;
  std::int64_t ninp = 2;
  std::int64_t nhid = 3;
  std::int64_t nindices = 3;
  std::int64_t nlayers = 4;
  std::int64_t batch = 5;
  double dropout = 0.5;
};

/// The LSTM's state: (h, c), each (nlayers, batch, nhid).
using Hidden = std::tuple<at::Tensor, at::Tensor>;

/// The embedding table (remote class "EmbeddingTable"), on the parameter server: an embedding,
/// then dropout. Its weights start uniform in [-0.1, 0.1] from `seed`.
class EmbeddingTable {
 public:
  EmbeddingTable(std::int64_t ntoken, std::int64_t ninp, double dropout, std::int64_t seed);
  /// The embeddings of `input` (token ids), after dropout.
  at::Tensor forward(at::Tensor input);
  /// Handles to its parameters, for the distributed optimizer.
  std::vector<ditask::RRef<at::Tensor>> parameter_rrefs();
  /// Its parameters' values now (copies).
  std::vector<at::Tensor> weights();
  /// Sets its parameters' values (tests, fixtures).
  void set_weights(std::vector<at::Tensor> values);
  /// The gradients of its parameters in context `context_id` (undefined where it has none).
  std::vector<at::Tensor> gradients(std::int64_t context_id);
  /// Whether any parameter has a .grad (distributed backward must leave them alone).
  bool has_local_grad();

 private:
  torch::nn::Embedding encoder_;
  torch::nn::Dropout drop_;
};

/// The decoder (remote class "Decoder"), on the parameter server: dropout, then a linear map to
/// the tokens. Its weight starts uniform in [-0.1, 0.1] from `seed`, its bias 0.
class Decoder {
 public:
  Decoder(std::int64_t ntoken, std::int64_t nhid, double dropout, std::int64_t seed);
  at::Tensor forward(at::Tensor output);
  std::vector<ditask::RRef<at::Tensor>> parameter_rrefs();
  std::vector<at::Tensor> weights();
  void set_weights(std::vector<at::Tensor> values);
  std::vector<at::Tensor> gradients(std::int64_t context_id);
  bool has_local_grad();

 private:
  torch::nn::Dropout drop_;
  torch::nn::Linear decoder_;
};

/// Defines EmbeddingTable and Decoder for remote calls: on every worker, before task().start().
void define_classes();

/// The trainer's side: the two remote parts on node `ps` and the LSTM here.
class RNNModel {
 public:
  /// Creates the remote parts on node `ps`; the LSTM's weights start from `seed`.
  RNNModel(std::int64_t ps, const Sizes& sizes, std::int64_t seed);
  /// Uses remote parts that exist already (shared with other trainers).
  RNNModel(ditask::RRef<EmbeddingTable> embedding, ditask::RRef<Decoder> decoder, const Sizes& sizes, std::int64_t seed);
  /// decoded (batch, nindices, ntoken) and the LSTM's next state, as the tutorial's forward.
  std::pair<at::Tensor, Hidden> forward(const at::Tensor& input, const Hidden& hidden);
  /// Handles to every parameter: the remote parts' and the LSTM's.
  std::vector<ditask::RRef<at::Tensor>> parameter_rrefs();
  /// A zero state for a batch of `batch` sequences.
  Hidden zero_hidden(std::int64_t batch) const;
  torch::nn::LSTM& lstm() { return lstm_; }
  ditask::RRef<EmbeddingTable>& embedding() { return emb_; }
  ditask::RRef<Decoder>& decoder() { return dec_; }

 private:
  Sizes sizes_;
  ditask::RRef<EmbeddingTable> emb_;
  torch::nn::LSTM lstm_{nullptr};
  ditask::RRef<Decoder> dec_;
};

}  // namespace rnn
