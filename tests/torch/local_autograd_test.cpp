// SPDX-License-Identifier: MIT
// Contexts and the backward of a graph that stays in one process (torch/src): ids, the current
// context, one per thread, gradients kept in the context (never in .grad), retain_graph, errors.
// The graphs that cross workers: torch_integration_test.cpp.
#include <catch2/catch.hpp>

#include <thread>

#include <ditask/torch.hpp>
#include <torch/torch.h>

namespace dist = ditask::dist_autograd;

TEST_CASE("dist_autograd in one process: ids, the current context, one per thread", "[torch][unit]") {
  CHECK(dist::current_context_id() == -1);
  const auto before = dist::live_contexts();
  std::int64_t first = 0;
  {
    dist::Context context;
    first = context.id();
    CHECK(dist::current_context_id() == first);
    CHECK((first >> 48) == 0);  // node 0 outside a worker
    CHECK(dist::live_contexts() == before + 1);
    CHECK_THROWS_WITH(dist::Context(), Catch::Matchers::StartsWith("this thread has a distributed autograd context "
                                                                   "already"));
    std::int64_t other = -1;
    std::thread t([&] {
      dist::Context mine;  // another thread: its own
      other = mine.id();
    });
    t.join();
    CHECK(other != first);
    CHECK(other != -1);
  }
  CHECK(dist::current_context_id() == -1);
  CHECK(dist::live_contexts() == before);
  dist::Context next;
  CHECK(next.id() > first);
}

TEST_CASE("dist_autograd in one process: gradients stay in the context, never in .grad", "[torch][unit]") {
  const auto w = torch::tensor({1.0, -2.0, 3.0}, torch::kDouble).requires_grad_();
  const auto v = torch::tensor({4.0}, torch::kDouble).requires_grad_();
  dist::Context a;
  dist::backward(a.id(), {(w * w).sum() + v.sum()});
  const auto grads = dist::get_gradients(a.id());
  CHECK(grads.size() == 2);
  CHECK(at::allclose(grads.at(w), 2 * w.detach()));
  CHECK(at::allclose(grads.at(v), torch::ones({1}, torch::kDouble)));
  CHECK_FALSE(grads.contains(torch::zeros({3})));
  CHECK_FALSE(w.grad().defined());
  CHECK_FALSE(v.grad().defined());
}

TEST_CASE("dist_autograd in one process: a second backward needs retain_graph, and adds up", "[torch][unit]") {
  const auto w = torch::tensor({2.0}, torch::kDouble).requires_grad_();
  dist::Context context;
  const auto loss = (w * w * w).sum();
  dist::backward(context.id(), {loss}, true);
  dist::backward(context.id(), {loss});
  CHECK(at::allclose(dist::get_gradients(context.id()).at(w), torch::tensor({24.0}, torch::kDouble)));
  CHECK_THROWS_WITH(dist::backward(context.id(), {loss}),
                    Catch::Matchers::Contains("ran its backward already, and its graph was freed"));
}

TEST_CASE("dist_autograd in one process: what backward and get_gradients refuse", "[torch][unit]") {
  const auto w = torch::ones({2}, torch::requires_grad());
  std::int64_t gone = 0;
  {
    dist::Context context;
    gone = context.id();
    CHECK_THROWS_WITH(dist::backward(context.id(), {}), Catch::Matchers::Contains("has no roots"));
    CHECK_THROWS_WITH(dist::backward(context.id(), {torch::ones({2})}),
                      Catch::Matchers::Contains("does not require grad"));
  }
  CHECK_THROWS_WITH(dist::backward(gone, {w.sum()}),
                    "no distributed autograd context " + std::to_string(gone) + " on this worker");
  CHECK_THROWS_WITH(dist::get_gradients(gone),
                    "no distributed autograd context " + std::to_string(gone) + " on this worker");
  CHECK_THROWS_WITH(dist::set_backward_timeout(std::chrono::milliseconds(0)),
                    "the backward timeout must be positive, got 0 ms");
}
