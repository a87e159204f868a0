// SPDX-License-Identifier: MIT
#include "model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace biggraph {

namespace {

constexpr float kEps = 1e-6f;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Row-wise Adagrad (PBG's): one sum of the mean squared gradient per row.
void adagrad_row(PartitionTable& t, int row, const Eigen::VectorXf& grad, float lr) {
  float& acc = t.adagrad[static_cast<std::size_t>(row)];
  acc += grad.squaredNorm() / static_cast<float>(grad.size());
  t.rows.row(row) -= (lr / (std::sqrt(acc) + kEps)) * grad.transpose();
}

// Ranks the true rhs of `e` among sampled candidates with `score` (ties count half).
template <class Score>
double rank_of(const Edge& e, const Partitioning& parts, int candidates, std::mt19937_64& rng, Score&& score) {
  const auto part = static_cast<std::size_t>(parts.part[static_cast<std::size_t>(e.rhs)]);
  const auto& members = parts.members[part];
  const double truth = score(e.rhs);
  double greater = 0;
  const bool all = static_cast<std::size_t>(candidates) >= members.size();
  std::uniform_int_distribution<std::size_t> pick(0, members.size() - 1);
  const std::size_t n = all ? members.size() : static_cast<std::size_t>(candidates);
  for (std::size_t k = 0; k < n; ++k) {
    const auto c = all ? members[k] : members[pick(rng)];
    if (c == e.rhs) {
      continue;
    }
    const double s = score(c);
    greater += s > truth ? 1.0 : (s == truth ? 0.5 : 0.0);
  }
  return 1.0 + greater;
}

template <class Score>
Ranking rank_all(std::span<const Edge> test, const Partitioning& parts, int candidates, std::int64_t max_edges,
                 std::uint64_t seed, Score&& score_of) {
  Ranking r;
  std::mt19937_64 rng(seed);
  for (const auto& e : test) {
    if (r.count >= max_edges) {
      break;
    }
    const double rank = rank_of(e, parts, candidates, rng, [&](std::int32_t c) { return score_of(e, c); });
    r.mrr += 1.0 / rank;
    r.hits10 += rank <= 10.0 ? 1.0 : 0.0;
    ++r.count;
  }
  if (r.count > 0) {
    r.mrr /= static_cast<double>(r.count);
    r.hits10 /= static_cast<double>(r.count);
  }
  return r;
}

}  // namespace

PartitionTable PartitionTable::random(int partition, int rows, const TrainConfig& cfg, std::uint64_t seed) {
  PartitionTable t;
  t.partition = partition;
  t.rows.resize(rows, cfg.dim);
  std::mt19937_64 rng(seed * 1000003u + static_cast<std::uint64_t>(partition));
  std::uniform_real_distribution<float> u(-cfg.init_scale, cfg.init_scale);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cfg.dim; ++j) {
      t.rows(i, j) = u(rng);
    }
  }
  t.adagrad.assign(static_cast<std::size_t>(rows), 0.0f);
  return t;
}

std::vector<std::uint8_t> PartitionTable::to_bytes() const {
  const std::int32_t header[3] = {partition, static_cast<std::int32_t>(rows.rows()), static_cast<std::int32_t>(rows.cols())};
  const std::size_t cells = static_cast<std::size_t>(rows.size());
  std::vector<std::uint8_t> out(sizeof header + (cells + adagrad.size()) * sizeof(float));
  std::memcpy(out.data(), header, sizeof header);
  std::memcpy(out.data() + sizeof header, rows.data(), cells * sizeof(float));
  std::memcpy(out.data() + sizeof header + cells * sizeof(float), adagrad.data(), adagrad.size() * sizeof(float));
  return out;
}

PartitionTable PartitionTable::from_bytes(std::span<const std::uint8_t> bytes) {
  std::int32_t header[3] = {};
  if (bytes.size() < sizeof header) {
    throw std::invalid_argument("a partition table needs a 12-byte header");
  }
  std::memcpy(header, bytes.data(), sizeof header);
  const auto n = static_cast<std::size_t>(header[1]);
  const auto d = static_cast<std::size_t>(header[2]);
  if (header[1] < 0 || header[2] < 0 || bytes.size() != sizeof header + (n * d + n) * sizeof(float)) {
    throw std::invalid_argument("a partition table of " + std::to_string(bytes.size()) + " bytes does not hold " +
                                std::to_string(n) + " rows of " + std::to_string(d));
  }
  PartitionTable t;
  t.partition = header[0];
  t.rows.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  std::memcpy(t.rows.data(), bytes.data() + sizeof header, n * d * sizeof(float));
  t.adagrad.resize(n);
  std::memcpy(t.adagrad.data(), bytes.data() + sizeof header + n * d * sizeof(float), n * sizeof(float));
  return t;
}

void Relation::apply(const Eigen::VectorXf& gradient, float learning_rate) {
  adagrad += gradient.cwiseProduct(gradient);
  vector -= (learning_rate * gradient.array() / (adagrad.array().sqrt() + kEps)).matrix();
}

BucketStats train_bucket(std::span<const Edge> edges, const Partitioning& parts, PartitionTable& L, PartitionTable& R,
                         const std::vector<Relation>& relations, std::vector<Eigen::VectorXf>& relation_gradients,
                         const TrainConfig& cfg, std::mt19937_64& rng) {
  BucketStats stats;
  if (R.rows.rows() == 0) {
    return stats;
  }
  std::uniform_int_distribution<int> corrupt(0, static_cast<int>(R.rows.rows()) - 1);
  Eigen::VectorXf query(cfg.dim), grad_query(cfg.dim), grad_t(cfg.dim);
  for (const auto& e : edges) {
    const int l = parts.offset[static_cast<std::size_t>(e.lhs)];
    const int t = parts.offset[static_cast<std::size_t>(e.rhs)];
    const auto& rel = relations[static_cast<std::size_t>(e.rel)];
    query = L.rows.row(l).transpose() + rel.vector;
    grad_query.setZero();
    // The positive: pull the score up; each negative: push it down.
    for (int k = 0; k <= cfg.negatives; ++k) {
      const bool positive = k == 0;
      const int target = positive ? t : corrupt(rng);
      if (!positive && target == t) {
        continue;
      }
      const float s = query.dot(R.rows.row(target));
      const float g = positive ? sigmoid(s) - 1.0f : sigmoid(s);  // d loss / d score
      stats.loss += positive ? -std::log(std::max(sigmoid(s), 1e-12f)) : -std::log(std::max(1.0f - sigmoid(s), 1e-12f));
      grad_query += g * R.rows.row(target).transpose();
      grad_t = g * query;
      adagrad_row(R, target, grad_t, cfg.learning_rate);
    }
    adagrad_row(L, l, grad_query, cfg.learning_rate);
    relation_gradients[static_cast<std::size_t>(e.rel)] += grad_query;
    ++stats.edges;
  }
  return stats;
}

Ranking evaluate(std::span<const Edge> test, const Partitioning& parts, const std::vector<PartitionTable>& tables,
                 const std::vector<Relation>& relations, int candidates, std::int64_t max_edges, std::uint64_t seed) {
  auto row = [&](std::int32_t entity) {
    return tables[static_cast<std::size_t>(parts.part[static_cast<std::size_t>(entity)])].rows.row(
        parts.offset[static_cast<std::size_t>(entity)]);
  };
  return rank_all(test, parts, candidates, max_edges, seed, [&](const Edge& e, std::int32_t c) {
    const Eigen::VectorXf query = row(e.lhs).transpose() + relations[static_cast<std::size_t>(e.rel)].vector;
    return static_cast<double>(query.dot(row(c)));
  });
}

Ranking degree_baseline(std::span<const Edge> test, const Partitioning& parts, const std::vector<std::vector<Edge>>& training,
                        int candidates, std::int64_t max_edges, std::uint64_t seed) {
  std::vector<double> in_degree(parts.part.size(), 0.0);
  for (const auto& bucket : training) {
    for (const auto& e : bucket) {
      in_degree[static_cast<std::size_t>(e.rhs)] += 1.0;
    }
  }
  return rank_all(test, parts, candidates, max_edges, seed,
                  [&](const Edge&, std::int32_t c) { return in_degree[static_cast<std::size_t>(c)]; });
}

}  // namespace biggraph
