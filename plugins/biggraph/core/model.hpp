// SPDX-License-Identifier: MIT
// The biggraph job's embeddings: a partition's entity table with row-wise Adagrad (as PBG keeps
// it), a translation operator per relation, training one bucket with negative sampling, and
// ranking held-out edges (MRR, Hits@10) beside a popularity baseline. Pure C++ and Eigen.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include <Eigen/Dense>

#include "graph.hpp"

namespace biggraph {

/// How to train. Defaults are the job's.
struct TrainConfig {
  int dim = 32;             ///< embedding size
  int negatives = 10;       ///< corrupted rhs per edge, from the rhs partition
  float learning_rate = 0.1f;
  float init_scale = 0.1f;  ///< initial values uniform in [-scale, scale]
};

/// One partition's embeddings (rows by offset) and their Adagrad sums (one per row).
struct PartitionTable {
  int partition = 0;
  Eigen::MatrixXf rows;         ///< rows x dim
  std::vector<float> adagrad;   ///< by row
  /// Random rows, the same for a (seed, partition).
  static PartitionTable random(int partition, int rows, const TrainConfig& cfg, std::uint64_t seed);
  /// As bytes (RPC payload) and back. Errors (from_bytes): std::invalid_argument for a bad size.
  std::vector<std::uint8_t> to_bytes() const;
  static PartitionTable from_bytes(std::span<const std::uint8_t> bytes);
};

/// A relation's translation vector (score(l, r, t) = (l + r) . t) and its Adagrad sums.
struct Relation {
  Eigen::VectorXf vector;
  Eigen::VectorXf adagrad;
  explicit Relation(int dim = 0) : vector(Eigen::VectorXf::Zero(dim)), adagrad(Eigen::VectorXf::Zero(dim)) {}
  /// Applies an accumulated gradient (Adagrad, element-wise).
  void apply(const Eigen::VectorXf& gradient, float learning_rate);
};

/// What training one bucket did.
struct BucketStats {
  std::int64_t edges = 0;
  double loss = 0;  ///< summed logistic loss over positives and negatives
};

/// Trains `edges` (all of bucket (lhs partition of `L`, rhs partition of `R`); `L` and `R` may be
/// the same table): one pass, logistic loss on each edge and `negatives` corrupted rhs,
/// row-wise Adagrad on the tables; relation gradients are summed into `relation_gradients` (for
/// the parameter servers) with `relations` held fixed.
BucketStats train_bucket(std::span<const Edge> edges, const Partitioning& parts, PartitionTable& L, PartitionTable& R,
                         const std::vector<Relation>& relations, std::vector<Eigen::VectorXf>& relation_gradients,
                         const TrainConfig& cfg, std::mt19937_64& rng);

/// Mean reciprocal rank and Hits@10 of held-out edges.
struct Ranking {
  double mrr = 0;
  double hits10 = 0;
  std::int64_t count = 0;
};
/// Ranks each test edge's rhs among `candidates` random entities of its partition (all of them
/// when fewer), ties counted half; at most `max_edges` edges (the first ones).
Ranking evaluate(std::span<const Edge> test, const Partitioning& parts, const std::vector<PartitionTable>& tables,
                 const std::vector<Relation>& relations, int candidates, std::int64_t max_edges, std::uint64_t seed);
/// The same ranking with an entity's score its in-degree among `training` edges (popularity).
Ranking degree_baseline(std::span<const Edge> test, const Partitioning& parts, const std::vector<std::vector<Edge>>& training,
                        int candidates, std::int64_t max_edges, std::uint64_t seed);

}  // namespace biggraph
