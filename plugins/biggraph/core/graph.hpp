// SPDX-License-Identifier: MIT
// The biggraph job's data: a multi-relation graph (entities, relation types, edges), read from a
// (gzip) edge list or made by a stochastic block model with planted communities; its split into
// P partitions and P x P buckets, and into training and held-out edges. Pure C++.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace biggraph {

/// One edge: entity `lhs` --relation `rel`--> entity `rhs` (indices into Graph's tables).
struct Edge {
  std::int32_t lhs = 0;
  std::int32_t rel = 0;
  std::int32_t rhs = 0;
};

/// Thread: none of its own (read-only once built).
struct Graph {
  std::vector<std::string> entities;   ///< names, by index
  std::vector<std::string> relations;  ///< names, by index
  std::vector<Edge> edges;
  std::vector<std::int32_t> community; ///< a planted community per entity (SBM only; else empty)
};

/// Reads "<relation>\t<lhs>\t<rhs>" lines (names), numbering entities and relations in order of
/// first appearance. Errors: std::runtime_error naming the line that has not three fields.
Graph read_edge_list(std::istream& in);
/// read_edge_list() of a file; a ".gz" one is read through `gzip -dc`. Errors:
/// std::runtime_error naming the file when it cannot be read.
Graph load_edge_list(const std::string& path);

/// A stochastic block model: `entities` in `communities` equal blocks; each entity gets
/// `out_degree` edges of relation "link", to an entity of its own block with probability
/// `p_within`, else to any other. Deterministic for a seed.
Graph sbm_graph(int entities, int communities, int out_degree, double p_within, std::uint64_t seed);

/// Which partition each entity is in (a seeded shuffle, dealt round-robin: equal sizes) and its
/// offset there.
struct Partitioning {
  int partitions = 1;
  std::vector<std::int32_t> part;    ///< by entity
  std::vector<std::int32_t> offset;  ///< by entity: its row in its partition's embeddings
  std::vector<std::int32_t> sizes;   ///< by partition
  /// The entities of partition `p`, by offset.
  std::vector<std::vector<std::int32_t>> members;
};
Partitioning partition_entities(int entities, int partitions, std::uint64_t seed);

/// Training and held-out edges; the training ones grouped by bucket (lhs partition * P + rhs
/// partition).
struct Split {
  std::vector<std::vector<Edge>> buckets;
  std::vector<Edge> test;
};
/// Holds out every edge with a seeded probability `test_fraction` (but never an entity's only
/// edge, so every test entity has been trained).
Split split_edges(const Graph& graph, const Partitioning& parts, double test_fraction, std::uint64_t seed);

}  // namespace biggraph
