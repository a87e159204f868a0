// SPDX-License-Identifier: MIT
#include "rnn_model.hpp"

#include <stdexcept>

#include <torch/nn/init.h>
#include <torch/utils.h>

namespace rnn {

namespace {

std::vector<ditask::RRef<at::Tensor>> handles_of(const torch::nn::Module& module) {
  return ditask::parameter_rrefs(module);
}

std::vector<at::Tensor> copies_of(const torch::nn::Module& module) {
  std::vector<at::Tensor> out;
  for (const auto& p : module.parameters()) {
    out.push_back(p.detach().clone());
  }
  return out;
}

void assign(torch::nn::Module& module, const std::vector<at::Tensor>& values) {
  auto params = module.parameters();
  if (params.size() != values.size()) {
    throw std::invalid_argument("set_weights: " + std::to_string(values.size()) + " values for " +
                                std::to_string(params.size()) + " parameters");
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) {
    params[i].copy_(values[i]);
  }
}

std::vector<at::Tensor> context_gradients(const torch::nn::Module& module, std::int64_t context_id) {
  const auto grads = ditask::dist_autograd::get_gradients(context_id);
  std::vector<at::Tensor> out;
  for (const auto& p : module.parameters()) {
    const auto g = grads.at(p);
    out.push_back(g.defined() ? g : at::zeros_like(p));
  }
  return out;
}

bool any_grad(const torch::nn::Module& module) {
  for (const auto& p : module.parameters()) {
    if (p.grad().defined()) {
      return true;
    }
  }
  return false;
}

}  // namespace

EmbeddingTable::EmbeddingTable(std::int64_t ntoken, std::int64_t ninp, double dropout, std::int64_t seed)
    : encoder_(nullptr), drop_(nullptr) {
  torch::manual_seed(static_cast<std::uint64_t>(seed));
  encoder_ = torch::nn::Embedding(ntoken, ninp);
  drop_ = torch::nn::Dropout(dropout);
  torch::NoGradGuard no_grad;
  encoder_->weight.uniform_(-0.1, 0.1);
}

at::Tensor EmbeddingTable::forward(at::Tensor input) { return drop_(encoder_(input)); }

std::vector<ditask::RRef<at::Tensor>> EmbeddingTable::parameter_rrefs() { return handles_of(*encoder_); }
std::vector<at::Tensor> EmbeddingTable::weights() { return copies_of(*encoder_); }
void EmbeddingTable::set_weights(std::vector<at::Tensor> values) { assign(*encoder_, values); }
std::vector<at::Tensor> EmbeddingTable::gradients(std::int64_t context_id) { return context_gradients(*encoder_, context_id); }
bool EmbeddingTable::has_local_grad() { return any_grad(*encoder_); }

Decoder::Decoder(std::int64_t ntoken, std::int64_t nhid, double dropout, std::int64_t seed)
    : drop_(nullptr), decoder_(nullptr) {
  torch::manual_seed(static_cast<std::uint64_t>(seed));
  drop_ = torch::nn::Dropout(dropout);
  decoder_ = torch::nn::Linear(nhid, ntoken);
  torch::NoGradGuard no_grad;
  decoder_->weight.uniform_(-0.1, 0.1);
  decoder_->bias.zero_();
}

at::Tensor Decoder::forward(at::Tensor output) { return decoder_(drop_(output)); }

std::vector<ditask::RRef<at::Tensor>> Decoder::parameter_rrefs() { return handles_of(*decoder_); }
std::vector<at::Tensor> Decoder::weights() { return copies_of(*decoder_); }
void Decoder::set_weights(std::vector<at::Tensor> values) { assign(*decoder_, values); }
std::vector<at::Tensor> Decoder::gradients(std::int64_t context_id) { return context_gradients(*decoder_, context_id); }
bool Decoder::has_local_grad() { return any_grad(*decoder_); }

void define_classes() {
  auto& rpc = ditask::rpc();
  rpc.define_class<EmbeddingTable>("EmbeddingTable")
      .constructor<std::int64_t, std::int64_t, double, std::int64_t>()
      .method("forward", &EmbeddingTable::forward)
      .method("parameter_rrefs", &EmbeddingTable::parameter_rrefs)
      .method("weights", &EmbeddingTable::weights)
      .method("set_weights", &EmbeddingTable::set_weights)
      .method("gradients", &EmbeddingTable::gradients)
      .method("has_local_grad", &EmbeddingTable::has_local_grad);
  rpc.define_class<Decoder>("Decoder")
      .constructor<std::int64_t, std::int64_t, double, std::int64_t>()
      .method("forward", &Decoder::forward)
      .method("parameter_rrefs", &Decoder::parameter_rrefs)
      .method("weights", &Decoder::weights)
      .method("set_weights", &Decoder::set_weights)
      .method("gradients", &Decoder::gradients)
      .method("has_local_grad", &Decoder::has_local_grad);
}

RNNModel::RNNModel(std::int64_t ps, const Sizes& sizes, std::int64_t seed) : sizes_(sizes) {
  auto& rpc = ditask::rpc();
  emb_ = rpc.remote<EmbeddingTable>(ps, sizes.ntoken, sizes.ninp, sizes.dropout, seed);
  torch::manual_seed(static_cast<std::uint64_t>(seed + 1));
  lstm_ = torch::nn::LSTM(torch::nn::LSTMOptions(sizes.ninp, sizes.nhid).num_layers(sizes.nlayers).dropout(sizes.dropout));
  dec_ = rpc.remote<Decoder>(ps, sizes.ntoken, sizes.nhid, sizes.dropout, seed + 2);
}

RNNModel::RNNModel(ditask::RRef<EmbeddingTable> embedding, ditask::RRef<Decoder> decoder, const Sizes& sizes,
                   std::int64_t seed)
    : sizes_(sizes), emb_(std::move(embedding)), dec_(std::move(decoder)) {
  torch::manual_seed(static_cast<std::uint64_t>(seed + 1));
  lstm_ = torch::nn::LSTM(torch::nn::LSTMOptions(sizes.ninp, sizes.nhid).num_layers(sizes.nlayers).dropout(sizes.dropout));
}

std::pair<at::Tensor, Hidden> RNNModel::forward(const at::Tensor& input, const Hidden& hidden) {
  const auto emb = emb_.call<at::Tensor>("forward", input);
  auto [output, next] = lstm_->forward(emb, hidden);
  const auto decoded = dec_.call<at::Tensor>("forward", output);
  return {decoded, next};
}

std::vector<ditask::RRef<at::Tensor>> RNNModel::parameter_rrefs() {
  auto all = emb_.call<std::vector<ditask::RRef<at::Tensor>>>("parameter_rrefs");
  for (auto& p : ditask::parameter_rrefs(*lstm_)) {
    all.push_back(std::move(p));
  }
  for (auto& p : dec_.call<std::vector<ditask::RRef<at::Tensor>>>("parameter_rrefs")) {
    all.push_back(std::move(p));
  }
  return all;
}

Hidden RNNModel::zero_hidden(std::int64_t batch) const {
  return {at::zeros({sizes_.nlayers, batch, sizes_.nhid}), at::zeros({sizes_.nlayers, batch, sizes_.nhid})};
}

}  // namespace rnn
