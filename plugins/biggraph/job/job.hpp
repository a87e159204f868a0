// SPDX-License-Identifier: MIT
// The biggraph job (PyTorch-BigGraph's layout on ditask): its parameters, its data as every
// worker loads it, and the roles' entry points. docs/biggraph.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph.hpp"
#include "model.hpp"

namespace biggraph {

/// The module arguments (`ditask --package biggraph ... -- graph=sbm epochs=5`).
struct JobParams {
  std::string graph = "sbm";  ///< "sbm", "debian" (the Debian 12 dependency graph) or an edge-list path
  int partitions = 4;
  int epochs = 5;
  TrainConfig train;
  double test_fraction = 0.05;
  int candidates = 1000;       ///< ranked against per held-out edge (all of its partition when fewer)
  std::int64_t eval_edges = 2000;
  std::uint64_t seed = 0;
  int sbm_entities = 2000, sbm_communities = 20, sbm_degree = 10;
  double sbm_p_within = 0.9;
  std::int64_t die_at_get = 0;  ///< > 0: a partition server's first incarnation dies at its k-th get (tests)
  std::int64_t die_at_acquire = 0;  ///< > 0: the lock server's first incarnation dies at its k-th acquire (tests)
  /// Reads ditask::args() (ditask::ModuleArgs). Errors: ditask::Error naming the argument.
  static JobParams from_args();
};

/// What every worker knows: the graph, its partitions and the training/held-out split (each
/// worker builds the same from the same seed).
struct JobData {
  JobParams params;
  Graph graph;
  Partitioning parts;
  Split split;
  /// Loads or makes the graph. Errors: std::runtime_error (an unreadable edge list).
  static JobData load(const JobParams& params);
};

/// Who serves what: the node ids of each role's group, from task().group().
struct Layout {
  std::vector<std::int64_t> trainers, parameter_servers, lock_servers, partition_servers;
  /// The partition server holding partition `p`, the parameter server holding relation `r`.
  std::int64_t partition_server_of(int p) const;
  std::int64_t parameter_server_of(int r) const;
  /// From the running task's groups. Errors: std::runtime_error when a role has no node.
  static Layout current();
};

/// RPC function and event names.
inline constexpr const char* kAcquire = "bg.acquire";   // lock server: (trainer, epoch) -> {"lhs","rhs"} | {"done"}
inline constexpr const char* kRelease = "bg.release";   // lock server: (trainer, lhs, rhs)
inline constexpr const char* kAbandon = "bg.abandon";   // lock server: (trainer): its bucket is pending again
inline constexpr const char* kNextEpoch = "bg.next_epoch";  // lock server: (epoch): it begins
inline constexpr const char* kGet = "bg.get";           // partition server: (p) -> bytes
inline constexpr const char* kPut = "bg.put";           // partition server: (p, bytes)
inline constexpr const char* kPull = "bg.pull";         // parameter server: (r) -> floats
inline constexpr const char* kPush = "bg.push";         // parameter server: (r, gradient floats)
inline constexpr const char* kShutdown = "bg.shutdown"; // event: the job is over

/// The lock server's, a partition server's and a parameter server's entry: define the RPC
/// functions, then serve until kShutdown.
void run_lock_server(const JobData& data);
void run_partition_server(const JobData& data);
void run_parameter_server(const JobData& data);
/// A parameter client's: nothing to serve (PBG's are threads of trainers); waits for kShutdown.
void run_idle();
/// A trainer's: the epochs; trainer 0 also evaluates, prints and ends the job.
void run_trainer(const JobData& data);

/// This worker's DITASK_ATTEMPT: 0 for its first incarnation, k after k restarts.
std::int64_t worker_attempt();

/// Floats as bytes and back (RPC payloads).
std::vector<std::uint8_t> float_bytes(const Eigen::VectorXf& v);
Eigen::VectorXf bytes_floats(const std::vector<std::uint8_t>& bytes);

}  // namespace biggraph
