// SPDX-License-Identifier: MIT
// The PyTorch-BigGraph-style job (plugins/biggraph) end to end: trainers, parameter servers and
// clients, a lock server and partition servers from --layout, training a planted-community graph
// to well above the popularity baseline; a partition server killed mid-epoch under
// --auto-recover (the job recovers: the bucket is trained again, the server's partitions restart).
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace ditask::test;
using namespace ditask::test::mesh;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

// The RESULT line's number `key` (NaN when missing).
double biggraph_number(const std::string& result, const std::string& key) {
  const auto value = field(result, key);
  return value == "<missing>" ? std::nan("") : std::stod(value);
}

std::string biggraph_result(const std::string& out) {
  for (const auto& line : split_lines(out)) {
    const auto at = line.find("RESULT trainers=");
    if (at != std::string::npos) {
      return line.substr(at + 7);
    }
  }
  return "<no RESULT>";
}

}  // namespace

TEST_CASE("biggraph: 2 machines' layout trains a planted-community graph far above the popularity baseline",
          "[biggraph][integration]") {
  auto r = run_ditask({"--package", module_path("biggraph"), "--layout", "biggraph:machines=2", "--", "graph=sbm",
                       "entities=1000", "communities=20", "partitions=2", "epochs=4", "dim=16"},
                      120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("ditask: layout biggraph:machines=2: trainer 0-1, parameter_server 2-3, "
                             "parameter_client 4-5, lock_server 6, partition_server 7-8, world size 9"));
  const auto result = biggraph_result(r.out);
  CAPTURE(result);
  CHECK(field(result, "trainers") == "2");
  CHECK(biggraph_number(result, "mrr") > 2 * biggraph_number(result, "baseline_mrr"));
  CHECK(biggraph_number(result, "hits10") > 3 * biggraph_number(result, "baseline_hits10"));
  CHECK(lines_with(r.out, "biggraph: epoch ").size() == 4);
}

TEST_CASE("biggraph: a partition server killed mid-epoch under --auto-recover: the job recovers and finishes",
          "[biggraph][integration]") {
  auto r = run_ditask({"--package", module_path("biggraph"), "--layout", "biggraph:machines=1,partition_servers=1",
                       "--auto-recover", "--restart-backoff", "0", "--", "graph=sbm", "entities=600",
                       "communities=20", "partitions=2", "epochs=3", "dim=16", "die_at_get=3"},
                      120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(lines_with(r.out, "dying at get 3 (die_at_get)").size() == 1);
  CHECK(lines_with(r.out, "restarted: its partitions start again from random").size() == 1);
  CHECK(lines_with(r.out, "abandoned: node ").size() >= 1);
  const auto result = biggraph_result(r.out);
  CAPTURE(result);
  CHECK(biggraph_number(result, "abandoned") >= 1);
  CHECK(lines_with(r.out, "biggraph: epoch ").size() == 3);
}

TEST_CASE("biggraph: the lock server killed mid-epoch under --auto-recover: the trainers wait for it and the "
          "job finishes, saying so",
          "[biggraph][integration]") {
  auto r = run_ditask({"--package", module_path("biggraph"), "--layout", "biggraph:machines=2", "--auto-recover",
                       "--restart-backoff", "0", "--", "graph=sbm", "entities=600", "communities=20", "partitions=2",
                       "epochs=3", "dim=16", "die_at_acquire=6"},
                      100s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(lines_with(r.out, "lock server node 6: dying at acquire 6 (die_at_acquire)").size() == 1);
  CHECK(lines_with(r.out, "lock server node 6 restarted: epoch ").size() == 1);
  CHECK(lines_with(r.out, "the lock server (node 6) is gone (").size() >= 1);
  CHECK(lines_with(r.out, "the lock server (node 6) is back (attempt 1)").size() >= 1);
  CHECK(lines_with(r.err, "node 6 (pid").size() >= 1);  // the launcher's restart line
  // The epochs go on from where they were: no epoch is started over, nor counted twice.
  CHECK(lines_with(r.out, "biggraph: epoch ").size() == 3);
  const auto result = biggraph_result(r.out);
  CAPTURE(result);
  CHECK(field(result, "restarts") == "1");
}

TEST_CASE("biggraph: the lock server killed without --auto-recover ends the job, naming it", "[biggraph][integration]") {
  auto r = run_ditask({"--package", module_path("biggraph"), "--layout", "biggraph:machines=1,partition_servers=1",
                       "--", "graph=sbm", "entities=600", "communities=20", "partitions=2", "epochs=3", "dim=16",
                       "die_at_acquire=3"},
                      100s);
  INFO(describe(r));
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Contains("ditask: job failed: node 3 (pid "));
  CHECK_THAT(r.err, Contains(", attempt 0) exited with code 3"));
  CHECK(lines_with(r.out, "RESULT trainers=").empty());
}
