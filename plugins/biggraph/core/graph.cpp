// SPDX-License-Identifier: MIT
#include "graph.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace biggraph {

namespace {

struct Numbering {
  std::unordered_map<std::string, std::int32_t> index;
  std::vector<std::string>* names;
  std::int32_t of(const std::string& name) {
    auto [it, added] = index.try_emplace(name, static_cast<std::int32_t>(names->size()));
    if (added) {
      names->push_back(name);
    }
    return it->second;
  }
};

}  // namespace

Graph read_edge_list(std::istream& in) {
  Graph g;
  Numbering entities{{}, &g.entities};
  Numbering relations{{}, &g.relations};
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) {
      continue;
    }
    const auto a = line.find('\t');
    const auto b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos || line.find('\t', b + 1) != std::string::npos) {
      throw std::runtime_error("edge list line " + std::to_string(number) +
                               " is not '<relation>\\t<lhs>\\t<rhs>': " + line.substr(0, 80));
    }
    Edge e;
    e.rel = relations.of(line.substr(0, a));
    e.lhs = entities.of(line.substr(a + 1, b - a - 1));
    e.rhs = entities.of(line.substr(b + 1));
    g.edges.push_back(e);
  }
  return g;
}

Graph load_edge_list(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    std::ifstream probe(path);
    if (!probe) {
      throw std::runtime_error("cannot read edge list " + path);
    }
    // gzip is an essential Debian package: no zlib dependency for one read.
    const std::string command = "gzip -dc '" + path + "'";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
    if (!pipe) {
      throw std::runtime_error("cannot run gzip -dc on " + path);
    }
    std::string text;
    char buffer[1 << 16];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0) {
      text.append(buffer, n);
    }
    if (::pclose(pipe.release()) != 0) {
      throw std::runtime_error("gzip -dc failed on " + path);
    }
    std::istringstream in(text);
    return read_edge_list(in);
  }
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("cannot read edge list " + path);
  }
  return read_edge_list(in);
}

Graph sbm_graph(int entities, int communities, int out_degree, double p_within, std::uint64_t seed) {
  if (entities < 2 || communities < 1 || communities > entities || out_degree < 1) {
    throw std::invalid_argument("sbm_graph needs entities >= 2, 1 <= communities <= entities, out_degree >= 1");
  }
  Graph g;
  g.relations = {"link"};
  g.entities.reserve(static_cast<std::size_t>(entities));
  g.community.resize(static_cast<std::size_t>(entities));
  const int block = (entities + communities - 1) / communities;
  for (int i = 0; i < entities; ++i) {
    std::string name(1, 'e');  // appended: "e" + std::to_string(i) trips GCC 12's -Wrestrict (bug 105329)
    name += std::to_string(i);
    g.entities.push_back(std::move(name));
    g.community[static_cast<std::size_t>(i)] = i / block;
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<int> anyone(0, entities - 1);
  for (int i = 0; i < entities; ++i) {
    const int c = i / block;
    const int lo = c * block;
    const int hi = std::min(entities, lo + block) - 1;
    std::uniform_int_distribution<int> mate(lo, hi);
    for (int k = 0; k < out_degree; ++k) {
      int j = coin(rng) < p_within ? mate(rng) : anyone(rng);
      if (j == i) {
        j = (i + 1 - lo) % (hi - lo + 1) + lo;  // no self-loops
      }
      g.edges.push_back(Edge{i, 0, j});
    }
  }
  return g;
}

Partitioning partition_entities(int entities, int partitions, std::uint64_t seed) {
  if (partitions < 1 || entities < partitions) {
    throw std::invalid_argument("partition_entities needs 1 <= partitions <= entities");
  }
  Partitioning p;
  p.partitions = partitions;
  std::vector<std::int32_t> order(static_cast<std::size_t>(entities));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  p.part.resize(order.size());
  p.offset.resize(order.size());
  p.sizes.assign(static_cast<std::size_t>(partitions), 0);
  p.members.resize(static_cast<std::size_t>(partitions));
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto e = static_cast<std::size_t>(order[k]);
    const auto q = static_cast<std::int32_t>(k % static_cast<std::size_t>(partitions));
    p.part[e] = q;
    p.offset[e] = p.sizes[static_cast<std::size_t>(q)]++;
    p.members[static_cast<std::size_t>(q)].push_back(order[k]);
  }
  return p;
}

Split split_edges(const Graph& graph, const Partitioning& parts, double test_fraction, std::uint64_t seed) {
  Split s;
  const auto P = static_cast<std::size_t>(parts.partitions);
  s.buckets.resize(P * P);
  std::vector<int> degree(graph.entities.size(), 0);
  for (const auto& e : graph.edges) {
    ++degree[static_cast<std::size_t>(e.lhs)];
    ++degree[static_cast<std::size_t>(e.rhs)];
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  for (const auto& e : graph.edges) {
    auto& dl = degree[static_cast<std::size_t>(e.lhs)];
    auto& dr = degree[static_cast<std::size_t>(e.rhs)];
    if (coin(rng) < test_fraction && dl > 1 && dr > 1) {
      --dl;
      --dr;
      s.test.push_back(e);
      continue;
    }
    const auto b = static_cast<std::size_t>(parts.part[static_cast<std::size_t>(e.lhs)]) * P +
                   static_cast<std::size_t>(parts.part[static_cast<std::size_t>(e.rhs)]);
    s.buckets[b].push_back(e);
  }
  return s;
}

}  // namespace biggraph
