// SPDX-License-Identifier: MIT
// The biggraph job's data and model (plugins/biggraph/core): edge lists, the planted-community
// graph, partitions and held-out edges; partition tables as bytes; and training that recovers
// the planted communities well above the popularity baseline.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <stdexcept>

#include "graph.hpp"
#include "model.hpp"

namespace biggraph_test {  // a unity batch shares one translation unit: names of our own

using namespace biggraph;

TEST_CASE("biggraph data: edge lists, the block model, partitions and held-out edges", "[biggraph][unit]") {
  std::istringstream text("D\ta\tb\nR\tb\tc\nD\tc\ta\n");
  const auto g = read_edge_list(text);
  CHECK(g.entities == std::vector<std::string>{"a", "b", "c"});
  CHECK(g.relations == std::vector<std::string>{"D", "R"});
  REQUIRE(g.edges.size() == 3);
  CHECK(g.edges[1].lhs == 1);
  CHECK(g.edges[1].rel == 1);
  CHECK(g.edges[1].rhs == 2);
  std::istringstream bad("D\ta\n");
  CHECK_THROWS_WITH(read_edge_list(bad), Catch::Matchers::StartsWith("edge list line 1 is not"));
  CHECK_THROWS_AS(load_edge_list("/nonexistent/edges.tsv.gz"), std::runtime_error);

  const auto sbm = sbm_graph(100, 4, 5, 0.9, 3);
  CHECK(sbm.entities.size() == 100);
  CHECK(sbm.edges.size() == 500);
  CHECK(sbm.community[99] == 3);
  int within = 0;
  for (const auto& e : sbm.edges) {
    CHECK(e.lhs != e.rhs);
    within += sbm.community[static_cast<std::size_t>(e.lhs)] == sbm.community[static_cast<std::size_t>(e.rhs)] ? 1 : 0;
  }
  CHECK(within > 400);  // p_within 0.9 plus chance
  CHECK(sbm_graph(100, 4, 5, 0.9, 3).edges[17].rhs == sbm.edges[17].rhs);  // the same for a seed

  const auto parts = partition_entities(100, 3, 1);
  CHECK(parts.sizes == std::vector<std::int32_t>{34, 33, 33});
  for (int e = 0; e < 100; ++e) {
    const auto& m = parts.members[static_cast<std::size_t>(parts.part[static_cast<std::size_t>(e)])];
    CHECK(m[static_cast<std::size_t>(parts.offset[static_cast<std::size_t>(e)])] == e);
  }
  const auto split = split_edges(sbm, parts, 0.2, 5);
  std::size_t trained = 0;
  for (const auto& b : split.buckets) {
    trained += b.size();
  }
  CHECK(trained + split.test.size() == 500);
  CHECK(split.test.size() > 50);
  CHECK(split.test.size() < 150);
}

TEST_CASE("biggraph model: partition tables round-trip as bytes, a bad size is refused", "[biggraph][unit]") {
  TrainConfig cfg;
  cfg.dim = 8;
  const auto t = PartitionTable::random(2, 5, cfg, 9);
  const auto back = PartitionTable::from_bytes(t.to_bytes());
  CHECK(back.partition == 2);
  CHECK(back.rows == t.rows);
  CHECK(back.adagrad == t.adagrad);
  auto bytes = t.to_bytes();
  bytes.pop_back();
  CHECK_THROWS_AS(PartitionTable::from_bytes(bytes), std::invalid_argument);
  CHECK(PartitionTable::random(2, 5, cfg, 9).rows == t.rows);  // the same for a (seed, partition)
}

TEST_CASE("biggraph model: training on a planted-community graph ranks held-out edges far above popularity",
          "[biggraph][unit]") {
  const int P = 2;
  const auto g = sbm_graph(600, 20, 10, 0.95, 11);
  const auto parts = partition_entities(600, P, 11);
  const auto split = split_edges(g, parts, 0.1, 12);
  TrainConfig cfg;
  cfg.dim = 16;
  std::vector<PartitionTable> tables;
  for (int p = 0; p < P; ++p) {
    tables.push_back(PartitionTable::random(p, parts.sizes[static_cast<std::size_t>(p)], cfg, 11));
  }
  std::vector<Relation> relations(1, Relation(cfg.dim));
  std::mt19937_64 rng(5);
  const auto before = evaluate(split.test, parts, tables, relations, 1000, 1000, 3);
  for (int epoch = 0; epoch < 10; ++epoch) {
    for (int l = 0; l < P; ++l) {
      for (int r = 0; r < P; ++r) {
        std::vector<Eigen::VectorXf> gradients(1, Eigen::VectorXf::Zero(cfg.dim));
        auto& L = tables[static_cast<std::size_t>(l)];
        auto& R = tables[static_cast<std::size_t>(r)];
        const auto stats = train_bucket(split.buckets[static_cast<std::size_t>(l * P + r)], parts, L, R, relations,
                                        gradients, cfg, rng);
        CHECK(stats.edges == static_cast<std::int64_t>(split.buckets[static_cast<std::size_t>(l * P + r)].size()));
        relations[0].apply(gradients[0], cfg.learning_rate);
      }
    }
  }
  const auto after = evaluate(split.test, parts, tables, relations, 1000, 1000, 3);
  const auto base = degree_baseline(split.test, parts, split.buckets, 1000, 1000, 3);
  CAPTURE(before.mrr, after.mrr, after.hits10, base.mrr, base.hits10);
  CHECK(after.count == static_cast<std::int64_t>(split.test.size()));
  CHECK(after.mrr > 2 * base.mrr);
  CHECK(after.hits10 > 3 * base.hits10);
  CHECK(after.mrr > 2 * before.mrr);
}

}  // namespace biggraph_test
