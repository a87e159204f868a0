// SPDX-License-Identifier: MIT
// The PyTorch RPC tutorial's distributed RNN on ditask: the embedding table and the decoder on
// the parameter server (role ps), the LSTM on each trainer (role trainer), trained with
// distributed autograd and a DistributedOptimizer. docs/autograd.md "The example".
//   ditask --package rnn --parallel-workers 2 --roles trainer:0,ps:1
//   ditask --package rnn --parallel-workers 3 --roles trainer:0-1,ps:2 -- task=text epochs=10 steps=20
#include <cmath>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include "rnn_model.hpp"
#include "text_task.hpp"

namespace {

// key=value module arguments.
struct Args {
  std::string task = "tutorial";
  std::string text = "/usr/share/common-licenses/GPL-3";
  std::int64_t epochs = 10;
  std::int64_t steps = 5;  // iterations per epoch (the tutorial's 5 batches)
  std::int64_t seed = 0;
  double lr = 0.05;

  static Args parse() {
    const ditask::ModuleArgs given({"task", "text", "epochs", "steps", "seed", "lr"});
    Args a;
    a.task = given.text("task", a.task);
    a.text = given.text("text", a.text);
    a.epochs = given.integer("epochs", a.epochs);
    a.steps = given.integer("steps", a.steps);
    a.seed = given.integer("seed", a.seed);
    a.lr = given.number("lr", a.lr);
    if (a.task != "tutorial" && a.task != "text") {
      throw std::invalid_argument("rnn: task=" + a.task + " is neither tutorial nor text");
    }
    if (a.epochs < 1 || a.steps < 1 || !(a.lr > 0)) {
      throw std::invalid_argument("rnn: epochs and steps must be at least 1, lr positive");
    }
    return a;
  }
};

std::string fixed(double v) {
  std::ostringstream out;
  out.precision(4);
  out << std::fixed << v;
  return out.str();
}

// The tutorial: its sizes, random token ids each batch, SGD; prints the mean loss of each epoch.
void train_tutorial(std::int64_t ps, const Args& args, std::int64_t self) {
  const rnn::Sizes sizes;
  rnn::RNNModel model(ps, sizes, args.seed + self);
  ditask::DistributedOptimizer opt("sgd", model.parameter_rrefs());
  torch::manual_seed(static_cast<std::uint64_t>(args.seed * 31 + self));
  auto hidden = model.zero_hidden(sizes.nindices);
  for (std::int64_t epoch = 0; epoch < args.epochs; ++epoch) {
    double total = 0;
    for (std::int64_t step = 0; step < args.steps; ++step) {
      const auto data = torch::randint(0, sizes.ntoken, {sizes.batch, sizes.nindices}, torch::kLong);
      const auto target = torch::randint(0, sizes.nindices, {sizes.batch, sizes.ntoken}, torch::kLong);
      ditask::dist_autograd::Context context;
      hidden = {std::get<0>(hidden).detach(), std::get<1>(hidden).detach()};
      auto [output, next] = model.forward(data, hidden);
      hidden = next;
      const auto loss = torch::nn::functional::cross_entropy(output, target);
      ditask::dist_autograd::backward(context.id(), {loss});
      opt.step(context.id());
      total += loss.item<double>();
    }
    std::cout << "Training epoch " << epoch << ": loss " << fixed(total / static_cast<double>(args.steps)) << std::endl;
  }
}

// Next-character prediction on a text: as in the tutorial, each trainer's embedding table and
// decoder live on the one parameter server (its own: two trainers updating one table would change
// a weight that the other's backward still needs) and its LSTM here; Adam. Prints the mean loss of
// each epoch and, at the end, the first and last against the text's unigram entropy.
void train_text(std::int64_t ps, const Args& args) {
  const rnn::TextTask text(args.text, 32);
  rnn::Sizes sizes;
  sizes.ntoken = text.tokens();
  sizes.ninp = 16;
  sizes.nhid = 64;
  sizes.nlayers = 1;
  sizes.dropout = 0;
  const std::int64_t self = ditask::task().router().node_id();
  rnn::RNNModel model(ps, sizes, args.seed + self);
  ditask::DistributedOptimizer opt("adam", model.parameter_rrefs());
  std::mt19937_64 rng(static_cast<std::uint64_t>(args.seed * 7919 + self));
  const std::int64_t batch = 16;
  double first_loss = 0, last_loss = 0;
  for (std::int64_t epoch = 0; epoch < args.epochs; ++epoch) {
    double total = 0;
    for (std::int64_t step = 0; step < args.steps; ++step) {
      auto [input, target] = text.batch(batch, rng);
      ditask::dist_autograd::Context context;
      auto [output, next] = model.forward(input, model.zero_hidden(batch));
      const auto loss = torch::nn::functional::cross_entropy(output.reshape({-1, sizes.ntoken}), target.reshape({-1}));
      ditask::dist_autograd::backward(context.id(), {loss});
      opt.step(context.id());
      total += loss.item<double>();
    }
    const double mean = total / static_cast<double>(args.steps);
    (epoch == 0 ? first_loss : last_loss) = mean;
    last_loss = mean;
    std::cout << "Training epoch " << epoch << ": loss " << fixed(mean) << std::endl;
  }
  std::cout << "rnn: trainer " << self << ": loss " << fixed(first_loss) << " -> " << fixed(last_loss)
            << " (guessing by frequency: " << fixed(text.unigram_entropy()) << ", uniform: "
            << fixed(std::log(static_cast<double>(sizes.ntoken))) << ")" << std::endl;
}

}  // namespace

DITASK_MAIN(main) {
  const Args args = Args::parse();
  auto& task = ditask::task();
  rnn::define_classes();
  ditask::define_optimizer("sgd", [lr = args.lr](std::vector<at::Tensor> params) {
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr));
  });
  ditask::define_optimizer("adam", [](std::vector<at::Tensor> params) {
    return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(0.01));
  });
  // The parameter server serves until every trainer's task ended (its finish).
  std::mutex mutex;
  std::condition_variable changed;
  int finished = 0;
  auto running = task.start();
  task.on(ditask::events::finish, [&](bool /*finished*/, const ditask::Kwargs&) {
    std::lock_guard lock(mutex);
    ++finished;
    changed.notify_all();
  });
  task.ready();
  if (!task.has_role("ps") && !task.has_role("trainer")) {
    throw std::runtime_error("rnn: node " + std::to_string(task.router().node_id()) +
                             " has no role: run it with --roles trainer:0,ps:1 (one ps, trainers)");
  }
  auto servers = task.group("ps");
  auto trainers = task.group("trainer");
  if (servers.size() != 1) {
    throw std::runtime_error("rnn: needs exactly one node with role ps, not " + std::to_string(servers.size()));
  }
  if (task.has_role("ps")) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return finished >= static_cast<int>(trainers.size()); });
    return;
  }
  const auto ps = servers.members().front();
  if (trainers.index() == 0) {
    std::cout << "rnn: " << trainers.size() << " trainer(s), parameter server node " << ps << ", task " << args.task
              << (args.task == "text" ? " (" + args.text + ")" : std::string()) << std::endl;
  }
  if (args.task == "tutorial") {
    train_tutorial(ps, args, task.router().node_id());
  } else {
    train_text(ps, args);
  }
}
