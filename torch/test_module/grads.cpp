// SPDX-License-Identifier: MIT
// The torch_tests module, part 1: the tutorial's model split across a trainer (node 0) and a
// parameter server (node 1), against the same model in one process. Checked by
// tests/torch/torch_integration_test.cpp.
#include <torch/torch.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "torch_tests.hpp"

using namespace mesh_tests;

namespace {

// The largest absolute difference between matching tensors of two lists.
double max_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) {
    return 1e9;
  }
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].sizes() != b[i].sizes()) {
      return 1e9;
    }
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  }
  return worst;
}

std::vector<at::Tensor> concat(std::vector<at::Tensor> a, const std::vector<at::Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The same model in this process: the remote parts' weights copied, the LSTM cloned.
struct LocalModel {
  torch::nn::Embedding emb{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear dec{nullptr};
  LocalModel(const rnn::Sizes& s, const std::vector<at::Tensor>& emb_w, torch::nn::LSTM& trainer_lstm,
             const std::vector<at::Tensor>& dec_w)
      : emb(torch::nn::Embedding(s.ntoken, s.ninp)), lstm(std::dynamic_pointer_cast<torch::nn::LSTMImpl>(trainer_lstm->clone())),
        dec(torch::nn::Linear(s.nhid, s.ntoken)) {
    torch::NoGradGuard no_grad;
    emb->weight.copy_(emb_w[0]);
    dec->weight.copy_(dec_w[0]);
    dec->bias.copy_(dec_w[1]);
  }
  std::vector<at::Tensor> parameters() const {
    std::vector<at::Tensor> all = emb->parameters();
    for (const auto& p : lstm->parameters()) {
      all.push_back(p);
    }
    for (const auto& p : dec->parameters()) {
      all.push_back(p);
    }
    return all;
  }
  at::Tensor loss(const at::Tensor& data, const at::Tensor& target, const rnn::Hidden& hidden) {
    auto [out, next] = lstm->forward(emb(data), hidden);
    return torch::nn::functional::cross_entropy(dec(out), target);
  }
};

}  // namespace

// grads_match (2 workers, dropout 0): one iteration of the tutorial's model, distributed, then the
// same in one process. Node 0 prints "RESULT grads=<max diff> params=<n> into_grad=<0|1>
// sgd=<max diff> adam=<max diff> live=<node 0>,<node 1>": the gradients of every parameter on
// both nodes, the weights after a DistributedOptimizer step with SGD (lr 0.05) and then with Adam
// (lr 0.01), each against LibTorch's optimizer on the local model, and the contexts left.
DITASK_MAIN(grads_match) {
  torch_tests::define_common();
  auto& task = ditask::task();
  auto running = task.start();
  if (node_id() != 0) {
    torch_tests::serve();
    return;
  }
  task.ready();
  rnn::Sizes sizes;
  sizes.dropout = 0;
  rnn::RNNModel model(1, sizes, 7);
  torch::manual_seed(11);
  const auto data = torch::randint(0, sizes.ntoken, {sizes.batch, sizes.nindices}, torch::kLong);
  const auto target = torch::randint(0, sizes.nindices, {sizes.batch, sizes.ntoken}, torch::kLong);
  const auto hidden = model.zero_hidden(sizes.nindices);
  auto local = LocalModel(sizes, model.embedding().call<std::vector<at::Tensor>>("weights"), model.lstm(),
                          model.decoder().call<std::vector<at::Tensor>>("weights"));
  ditask::DistributedOptimizer sgd("sgd", model.parameter_rrefs());
  ditask::DistributedOptimizer adam("adam", model.parameter_rrefs());
  auto distributed_weights = [&] {
    auto w = model.embedding().call<std::vector<at::Tensor>>("weights");
    for (const auto& p : model.lstm()->parameters()) {
      w.push_back(p.detach().clone());
    }
    return concat(w, model.decoder().call<std::vector<at::Tensor>>("weights"));
  };
  double grads = 0, sgd_diff = 0, adam_diff = 0;
  bool into_grad = false;
  std::size_t params = 0;
  for (int round = 0; round < 2; ++round) {
    std::vector<at::Tensor> dist_grads;
    {
      ditask::dist_autograd::Context context;
      auto [decoded, next] = model.forward(data, hidden);
      const auto loss = torch::nn::functional::cross_entropy(decoded, target);
      ditask::dist_autograd::backward(context.id(), {loss});
      const auto mine = ditask::dist_autograd::get_gradients(context.id());
      std::vector<at::Tensor> lstm_grads;
      for (const auto& p : model.lstm()->parameters()) {
        lstm_grads.push_back(mine.at(p));
        into_grad = into_grad || p.grad().defined();
      }
      dist_grads = concat(concat(model.embedding().call<std::vector<at::Tensor>>("gradients", context.id()), lstm_grads),
                          model.decoder().call<std::vector<at::Tensor>>("gradients", context.id()));
      into_grad = into_grad || model.embedding().call<bool>("has_local_grad") ||
                  model.decoder().call<bool>("has_local_grad");
      (round == 0 ? sgd : adam).step(context.id());
    }
    // The same step in this process.
    auto local_params = local.parameters();
    const auto local_grads = torch::autograd::grad({local.loss(data, target, hidden)}, local_params);
    grads = std::max(grads, max_diff(dist_grads, local_grads));
    params = local_params.size();
    for (std::size_t i = 0; i < local_params.size(); ++i) {
      local_params[i].mutable_grad() = local_grads[i];
    }
    if (round == 0) {
      torch::optim::SGD(local_params, torch::optim::SGDOptions(0.05)).step();
      sgd_diff = max_diff(distributed_weights(), local.parameters());
    } else {
      torch::optim::Adam(local_params, torch::optim::AdamOptions(0.01)).step();
      adam_diff = max_diff(distributed_weights(), local.parameters());
    }
    for (auto& p : local_params) {
      p.mutable_grad() = at::Tensor();
    }
  }
  result("grads=" + torch_tests::below(grads, 1e-6) + " params=" + std::to_string(params) +
         " into_grad=" + (into_grad ? "1" : "0") + " sgd=" + torch_tests::below(sgd_diff, 1e-6) +
         " adam=" + torch_tests::below(adam_diff, 1e-6) + " live=" + torch_tests::live_everywhere({0, 1}));
}

namespace {

at::Tensor from_fixture(const ditask::json& t, at::ScalarType type) {
  const auto shape = t.at("shape").get<std::vector<std::int64_t>>();
  const auto values = t.at("values").get<std::vector<double>>();
  return torch::tensor(values, torch::kDouble).reshape(shape).to(type);
}

}  // namespace

// pytorch_fixture (2 workers, fixture=<torch/fixtures/rnn_tutorial.json>): PyTorch's own run of the
// tutorial's distributed RNN (weights, a batch, its loss and get_gradients for every parameter),
// repeated here with the same weights and batch. Node 0 prints "RESULT loss=<ok|diff>
// grads=<ok|max diff> params=<n>" (within 1e-6).
DITASK_MAIN(pytorch_fixture) {
  torch_tests::define_common();
  auto& task = ditask::task();
  auto running = task.start();
  if (node_id() != 0) {
    torch_tests::serve();
    return;
  }
  task.ready();
  const Params params;
  std::ifstream in(params.text("fixture", ""));
  if (!in) {
    throw std::runtime_error("pytorch_fixture: cannot read fixture=" + params.text("fixture", ""));
  }
  const auto fixture = ditask::json::parse(in);
  const auto& w = fixture.at("weights");
  const auto& s = fixture.at("sizes");
  rnn::Sizes sizes;
  sizes.ntoken = s.at("ntoken");
  sizes.ninp = s.at("ninp");
  sizes.nhid = s.at("nhid");
  sizes.nindices = s.at("nindices");
  sizes.nlayers = s.at("nlayers");
  sizes.batch = s.at("batch");
  sizes.dropout = s.at("dropout");
  rnn::RNNModel model(1, sizes, 0);
  model.embedding().call<void>("set_weights", std::vector<at::Tensor>{from_fixture(w.at("embedding.encoder.weight"), at::kFloat)});
  model.decoder().call<void>("set_weights", std::vector<at::Tensor>{from_fixture(w.at("decoder.decoder.weight"), at::kFloat),
                                                                    from_fixture(w.at("decoder.decoder.bias"), at::kFloat)});
  {
    torch::NoGradGuard no_grad;
    for (auto& named : model.lstm()->named_parameters()) {
      named.value().copy_(from_fixture(w.at("lstm." + named.key()), at::kFloat));
    }
  }
  const auto data = from_fixture(fixture.at("data"), at::kLong);
  const auto target = from_fixture(fixture.at("target"), at::kLong);
  double loss_diff = 0, grad_diff = 0;
  std::size_t count = 0;
  {
    ditask::dist_autograd::Context context;
    auto [decoded, next] = model.forward(data, model.zero_hidden(sizes.nindices));
    const auto loss = torch::nn::functional::cross_entropy(decoded, target);
    loss_diff = std::abs(loss.item<double>() - fixture.at("loss").get<double>());
    ditask::dist_autograd::backward(context.id(), {loss});
    const auto& expected = fixture.at("gradients");
    auto compare = [&](const at::Tensor& got, const std::string& name) {
      grad_diff = std::max(grad_diff, (got.to(at::kDouble) - from_fixture(expected.at(name), at::kDouble)).abs().max().item<double>());
      ++count;
    };
    compare(model.embedding().call<std::vector<at::Tensor>>("gradients", context.id()).at(0), "embedding.encoder.weight");
    const auto mine = ditask::dist_autograd::get_gradients(context.id());
    for (const auto& named : model.lstm()->named_parameters()) {
      compare(mine.at(named.value()), "lstm." + named.key());
    }
    const auto dec = model.decoder().call<std::vector<at::Tensor>>("gradients", context.id());
    compare(dec.at(0), "decoder.decoder.weight");
    compare(dec.at(1), "decoder.decoder.bias");
  }
  result("loss=" + torch_tests::below(loss_diff, 1e-6) + " grads=" + torch_tests::below(grad_diff, 1e-6) +
         " params=" + std::to_string(count));
}
