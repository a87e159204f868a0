// SPDX-License-Identifier: MIT
// The biggraph module's entry: every worker loads the same graph, then does what its role says
// (--layout biggraph:machines=M[,partition_servers=P] gives the roles). docs/biggraph.md.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <ditask/ditask.hpp>

#include "job.hpp"

namespace biggraph {

namespace {

// The folder this module was loaded from (its data lies beside it).
std::filesystem::path module_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&module_dir), &info) == 0 || info.dli_fname == nullptr) {
    return std::filesystem::current_path();
  }
  return std::filesystem::path(info.dli_fname).parent_path();
}

std::vector<std::int64_t> members_of(const char* role) { return ditask::task().group(role).members(); }

}  // namespace

JobParams JobParams::from_args() {
  const ditask::ModuleArgs a({"graph", "partitions", "epochs", "dim", "negatives", "lr", "test_fraction",
                                      "candidates", "eval_edges", "seed", "entities", "communities", "degree",
                                      "p_within", "die_at_get", "die_at_acquire"});
  JobParams p;
  p.graph = a.text("graph", p.graph);
  p.partitions = static_cast<int>(a.integer("partitions", p.partitions));
  p.epochs = static_cast<int>(a.integer("epochs", p.epochs));
  p.train.dim = static_cast<int>(a.integer("dim", p.train.dim));
  p.train.negatives = static_cast<int>(a.integer("negatives", p.train.negatives));
  p.train.learning_rate = static_cast<float>(a.number("lr", p.train.learning_rate));
  p.test_fraction = a.number("test_fraction", p.test_fraction);
  p.candidates = static_cast<int>(a.integer("candidates", p.candidates));
  p.eval_edges = a.integer("eval_edges", p.eval_edges);
  p.seed = static_cast<std::uint64_t>(a.integer("seed", 0));
  p.sbm_entities = static_cast<int>(a.integer("entities", p.sbm_entities));
  p.sbm_communities = static_cast<int>(a.integer("communities", p.sbm_communities));
  p.sbm_degree = static_cast<int>(a.integer("degree", p.sbm_degree));
  p.sbm_p_within = a.number("p_within", p.sbm_p_within);
  p.die_at_get = a.integer("die_at_get", 0);
  p.die_at_acquire = a.integer("die_at_acquire", 0);
  if (p.partitions < 1 || p.epochs < 1 || p.train.dim < 1 || p.train.negatives < 0 || p.candidates < 1 ||
      p.test_fraction < 0 || p.test_fraction >= 1) {
    throw std::invalid_argument(
        "biggraph: partitions, epochs, dim and candidates must be at least 1, negatives at least 0, test_fraction "
        "in [0, 1)");
  }
  return p;
}

JobData JobData::load(const JobParams& params) {
  JobData d;
  d.params = params;
  if (params.graph == "sbm") {
    d.graph = sbm_graph(params.sbm_entities, params.sbm_communities, params.sbm_degree, params.sbm_p_within, params.seed);
  } else if (params.graph == "debian") {
    d.graph = load_edge_list((module_dir() / "biggraph" / "debian12_deps.tsv.gz").string());
  } else {
    d.graph = load_edge_list(params.graph);
  }
  d.parts = partition_entities(static_cast<int>(d.graph.entities.size()), params.partitions, params.seed);
  d.split = split_edges(d.graph, d.parts, params.test_fraction, params.seed + 1);
  return d;
}

std::int64_t Layout::partition_server_of(int p) const {
  return partition_servers[static_cast<std::size_t>(p) % partition_servers.size()];
}

std::int64_t Layout::parameter_server_of(int r) const {
  return parameter_servers[static_cast<std::size_t>(r) % parameter_servers.size()];
}

Layout Layout::current() {
  Layout l;
  l.trainers = members_of("trainer");
  l.parameter_servers = members_of("parameter_server");
  l.lock_servers = members_of("lock_server");
  l.partition_servers = members_of("partition_server");
  if (l.partition_servers.empty() && !l.trainers.empty()) {
    throw std::runtime_error(
        "biggraph: no partition server (partition_servers=0): this example keeps the partitions on partition "
        "servers; PyTorch-BigGraph's 0, partitions swapped through a shared disk, is not implemented; leave "
        "partition_servers out (one per machine) or give at least 1");
  }
  for (const auto* group : {&l.trainers, &l.parameter_servers, &l.lock_servers, &l.partition_servers}) {
    if (group->empty()) {
      throw std::runtime_error(
          "biggraph: a role has no node: run it with --layout biggraph:machines=M[,partition_servers=P]");
    }
  }
  return l;
}

std::int64_t worker_attempt() {
  const char* attempt = std::getenv("DITASK_ATTEMPT");
  return attempt == nullptr ? 0 : std::strtoll(attempt, nullptr, 10);
}

std::vector<std::uint8_t> float_bytes(const Eigen::VectorXf& v) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(v.size()) * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

Eigen::VectorXf bytes_floats(const std::vector<std::uint8_t>& bytes) {
  Eigen::VectorXf v(static_cast<Eigen::Index>(bytes.size() / sizeof(float)));
  std::memcpy(v.data(), bytes.data(), static_cast<std::size_t>(v.size()) * sizeof(float));
  return v;
}

}  // namespace biggraph

// `ditask --package biggraph --layout biggraph:machines=2 -- graph=debian epochs=5`
DITASK_MAIN(main) {
  const auto params = biggraph::JobParams::from_args();
  const auto data = biggraph::JobData::load(params);
  auto& task = ditask::task();
  if (task.has_role("lock_server")) {
    biggraph::run_lock_server(data);
  } else if (task.has_role("partition_server")) {
    biggraph::run_partition_server(data);
  } else if (task.has_role("parameter_server")) {
    biggraph::run_parameter_server(data);
  } else if (task.has_role("trainer")) {
    biggraph::run_trainer(data);
  } else {
    biggraph::run_idle();  // a parameter client
  }
}
