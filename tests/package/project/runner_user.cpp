// SPDX-License-Identifier: MIT
// A program that supervises itself, as DI-engine's `Parallel.runner(...)(main)` does.
// `runner_user ok` must exit 0 with three workers; `runner_user fail` must exit 1.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <ditask/ditask.hpp>
#include <ditask/launcher/parallel.hpp>

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  // Runs in the launching process and again in every worker (documented).
  return ditask::Parallel::runner({.n_parallel_workers = 3, .labels = {"learner"}})([&mode] {
    auto& router = ditask::task().router();
    std::printf("runner_user: node %lld of %lld active=%d learner=%d args=%zu\n",
                static_cast<long long>(router.node_id()),
                static_cast<long long>(router.parallel_workers()), router.is_active() ? 1 : 0,
                router.labels().count("learner") != 0 ? 1 : 0, ditask::args().size());
    if (mode == "fail" && router.node_id() == 1) {
      throw std::runtime_error("runner_user: node 1 gives up");
    }
  });
}
