// SPDX-License-Identifier: MIT
// Distributed autograd between real workers (the torch_tests module, torch/test_module/), over
// tcp, ipc and Redis: the tutorial's model split across a trainer and a parameter server gives
// the gradients and optimizer steps of the same model in one process; the protocol's rules; how
// a backward fails. And the rnn example, as README shows it.
#include <cstdio>

#include <catch2/catch.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace ditask::test;
using namespace ditask::test::mesh;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// The torch_tests module's entry over `transport`: "tcp", "ipc" or "redis" (`over` holds the
// redis-server).
std::vector<std::string> torch_args(const Over& over, const std::string& transport, const std::string& entry,
                                    int workers, std::vector<std::string> more = {}) {
  if (transport == "ipc") {
    more.insert(more.begin(), {"--protocol", "ipc"});
  }
  return over.args(module_args("torch_tests", entry, workers, std::move(more)));
}

std::string redis_or_mesh(const std::string& transport) { return transport == "redis" ? "redis" : "mesh"; }

}  // namespace

TEST_CASE("dist autograd: the tutorial's model across two workers gives the gradients and optimizer steps of one "
          "process",
          "[torch][integration]") {
  const std::string transport = GENERATE(as<std::string>{}, "tcp", "ipc", "redis");
  CAPTURE(transport);
  const Over over(redis_or_mesh(transport));
  auto r = run_ditask(torch_args(over, transport, "grads_match", 2), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  // 1 embedding + 16 LSTM + 2 decoder parameters; every gradient and every weight after an SGD
  // and an Adam step within 1e-6 of LibTorch's in one process; nothing in .grad; no context left.
  CHECK(result_of(r.out, 0) == "grads=ok params=19 into_grad=0 sgd=ok adam=ok live=0,0");
}

TEST_CASE("dist autograd: the tutorial's model gives PyTorch's own loss and gradients (a fixture PyTorch 1.13 made)",
          "[torch][integration]") {
  const Over over("mesh");
  auto r = run_ditask(torch_args(over, "tcp", "pytorch_fixture", 2,
                                 {"--", "fixture=" + std::string(DITASK_SOURCE_DIR) + "/torch/fixtures/rnn_tutorial.json"}),
                      120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "loss=ok grads=ok params=19");
}

TEST_CASE("dist autograd: contexts apart, nested calls join, sums, unreachable results, retain_graph, late calls",
          "[torch][integration]") {
  const std::string transport = GENERATE(as<std::string>{}, "tcp", "ipc", "redis");
  CAPTURE(transport);
  const Over over(redis_or_mesh(transport));
  auto r = run_ditask(torch_args(over, transport, "protocol", 3), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "isolated=ok nested=ok sum=ok unreachable=ok retain=ok late=ok live=0,0,0");
}

TEST_CASE("dist autograd: a part that throws fails backward naming the node, one that hangs fails it at the timeout "
          "naming the pair",
          "[torch][integration]") {
  const std::string transport = GENERATE(as<std::string>{}, "tcp", "redis");
  CAPTURE(transport);
  const Over over(redis_or_mesh(transport));
  auto r = run_ditask(torch_args(over, transport, "backward_fails", 2), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const auto errors = tagged(r.out, 0, "ERROR");
  REQUIRE(errors.size() == 2);
  CHECK_THAT(errors[0], StartsWith("backward of context "));
  CHECK_THAT(errors[0], Contains(" failed: node 1: boom in backward (in the part of the graph behind send #"));
  CHECK_THAT(errors[0], Contains(", made by MulBackward"));  // the function involved
  CHECK_THAT(errors[1], Contains(" failed: no answer within 1500 ms for the gradients of send #"));
  CHECK_THAT(errors[1], Contains(" of node 1 (received here)"));
  CHECK(result_of(r.out, 0) == "live=0,0");
}

TEST_CASE("dist autograd: a worker that dies in its part fails the backward at once with node_left",
          "[torch][integration]") {
  const std::string transport = GENERATE(as<std::string>{}, "tcp", "redis");
  CAPTURE(transport);
  const Over over(redis_or_mesh(transport));
  auto r = run_ditask(
      torch_args(over, transport, "backward_node_dies", 2, {"--auto-recover", "--restart-backoff", "0"}), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const auto errors = tagged(r.out, 0, "ERROR");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Contains(" failed: node 1: node 1 left ("));
  CHECK_THAT(r.err, Contains("node 1 (pid "));
  CHECK(result_of(r.out, 0) == "live=0,0");
}

TEST_CASE("rnn example: the tutorial's RNN trains on a trainer and a parameter server", "[torch][integration]") {
  auto r = run_ditask({"--package", module_path("rnn"), "--parallel-workers", "2", "--roles", "trainer:0,ps:1"}, 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(tagged(r.out, 0, "rnn:") == std::vector<std::string>{"1 trainer(s), parameter server node 1, task tutorial"});
  CHECK(lines_with(r.out, "[node 0] Training epoch ").size() == 10);
  CHECK(lines_with(r.out, "[node 1] ").empty());
}

TEST_CASE("rnn example: two trainers share one parameter server and learn a text", "[torch][integration]") {
  auto r = run_ditask({"--package", module_path("rnn"), "--parallel-workers", "3", "--roles", "trainer:0-1,ps:2", "--",
                       "task=text", "epochs=6", "steps=20"},
                      120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  for (const long trainer : {0L, 1L}) {
    const auto summary = tagged(r.out, trainer, "rnn:");
    REQUIRE_FALSE(summary.empty());
    CAPTURE(summary.back());
    // "trainer N: loss A -> B (guessing by frequency: U, uniform: V)": B well below A and below U.
    double first = 0, last = 0, unigram = 0;
    REQUIRE(std::sscanf(summary.back().c_str(), "trainer %*d: loss %lf -> %lf (guessing by frequency: %lf", &first,
                        &last, &unigram) == 3);
    CHECK(last < first - 0.5);
    CHECK(last < unigram);
  }
}
