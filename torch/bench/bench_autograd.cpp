// SPDX-License-Identifier: MIT
// The ditask side of `scripts/bench.sh autograd` (scripts/bench_autograd.sh): the tutorial's
// iteration (forward through the parameter server, distributed backward, distributed optimizer
// step, the context's end) between 2 workers, beside the same model in one process (LibTorch
// alone) and the round trip of an empty call, all measured in this one run.
//   ditask --package bench_autograd --main iteration --parallel-workers 2 -- rounds=2000 warmup=200
// Node 0 prints one line: "bench_autograd iteration dist_p50_us=.. dist_p99_us=.. local_p50_us=..
// rpcs=<calls per iteration> rtt_p50_us=..".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include <torch/torch.h>

#include "../examples/rnn/rnn_model.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

}  // namespace

DITASK_MAIN(iteration) {
  const ditask::ModuleArgs given({"rounds", "warmup"});
  const auto rounds = given.integer("rounds", 2000), warmup = given.integer("warmup", 200);
  rnn::define_classes();
  ditask::define_optimizer("sgd", [](std::vector<at::Tensor> params) {
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.05));
  });
  auto& rpc = ditask::rpc();
  rpc.define("bench.noop", [] { return std::int64_t{0}; });
  auto& task = ditask::task();
  auto running = task.start();
  if (task.router().node_id() != 0) {
    auto finish = task.waiter(ditask::events::finish);
    task.ready();
    finish.wait(std::chrono::minutes(30));
    return;
  }
  task.ready();
  const rnn::Sizes sizes;  // the tutorial's, dropout 0.5
  torch::manual_seed(1);
  std::vector<std::pair<at::Tensor, at::Tensor>> batches;
  for (int i = 0; i < 16; ++i) {
    batches.emplace_back(torch::randint(0, sizes.ntoken, {sizes.batch, sizes.nindices}, torch::kLong),
                         torch::randint(0, sizes.nindices, {sizes.batch, sizes.ntoken}, torch::kLong));
  }
  // The distributed iteration.
  rnn::RNNModel model(1, sizes, 3);
  ditask::DistributedOptimizer opt("sgd", model.parameter_rrefs());
  auto hidden = model.zero_hidden(sizes.nindices);
  std::vector<double> dist, forward_us, backward_us, step_us, release_us;
  std::uint64_t calls_before = 0;
  for (std::int64_t i = 0; i < warmup + rounds; ++i) {
    if (i == warmup) {
      calls_before = rpc.stats().calls;
    }
    const auto& [data, target] = batches[static_cast<std::size_t>(i) % batches.size()];
    const auto start = Clock::now();
    Clock::time_point forwarded, backwarded, stepped;
    {
      ditask::dist_autograd::Context context;
      hidden = {std::get<0>(hidden).detach(), std::get<1>(hidden).detach()};
      auto [output, next] = model.forward(data, hidden);
      hidden = next;
      const auto loss = torch::nn::functional::cross_entropy(output, target);
      forwarded = Clock::now();
      ditask::dist_autograd::backward(context.id(), {loss});
      backwarded = Clock::now();
      opt.step(context.id());
      stepped = Clock::now();
    }
    if (i >= warmup) {
      const auto end = Clock::now();
      dist.push_back(micros(end - start));
      forward_us.push_back(micros(forwarded - start));
      backward_us.push_back(micros(backwarded - forwarded));
      step_us.push_back(micros(stepped - backwarded));
      release_us.push_back(micros(end - stepped));
    }
  }
  const double rpcs = static_cast<double>(rpc.stats().calls - calls_before) / static_cast<double>(rounds);
  // The same model in this process.
  torch::manual_seed(3);
  torch::nn::Embedding emb(sizes.ntoken, sizes.ninp);
  torch::nn::Dropout drop1(sizes.dropout), drop2(sizes.dropout);
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(sizes.ninp, sizes.nhid).num_layers(sizes.nlayers).dropout(sizes.dropout));
  torch::nn::Linear dec(sizes.nhid, sizes.ntoken);
  std::vector<at::Tensor> params;
  for (auto* m : std::initializer_list<torch::nn::Module*>{emb.get(), lstm.get(), dec.get()}) {
    for (const auto& p : m->parameters()) {
      params.push_back(p);
    }
  }
  torch::optim::SGD local_opt(params, torch::optim::SGDOptions(0.05));
  auto local_hidden = model.zero_hidden(sizes.nindices);
  std::vector<double> local;
  for (std::int64_t i = 0; i < warmup + rounds; ++i) {
    const auto& [data, target] = batches[static_cast<std::size_t>(i) % batches.size()];
    const auto start = Clock::now();
    local_hidden = {std::get<0>(local_hidden).detach(), std::get<1>(local_hidden).detach()};
    local_opt.zero_grad();
    auto [output, next] = lstm->forward(drop1(emb(data)), local_hidden);
    local_hidden = next;
    const auto loss = torch::nn::functional::cross_entropy(dec(drop2(output)), target);
    loss.backward();
    local_opt.step();
    if (i >= warmup) {
      local.push_back(micros(Clock::now() - start));
    }
  }
  // An empty call's round trip.
  std::vector<double> rtt;
  for (std::int64_t i = 0; i < warmup + rounds; ++i) {
    const auto start = Clock::now();
    (void)rpc.call<std::int64_t>(1, "bench.noop");
    if (i >= warmup) {
      rtt.push_back(micros(Clock::now() - start));
    }
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "bench_autograd iteration dist_p50_us=%.1f dist_p99_us=%.1f local_p50_us=%.1f rpcs=%.2f rtt_p50_us=%.1f"
                " forward_p50_us=%.1f backward_p50_us=%.1f step_p50_us=%.1f release_p50_us=%.1f",
                percentile(dist, 0.5), percentile(dist, 0.99), percentile(local, 0.5), rpcs, percentile(rtt, 0.5),
                percentile(forward_us, 0.5), percentile(backward_us, 0.5), percentile(step_us, 0.5),
                percentile(release_us, 0.5));
  std::cout << line << std::endl;
}
