// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ditask {

/// The settings of Parallel::runner: DI-engine's `Parallel.runner(...)` parameters, with the
/// same defaults as the ditask command line (topology mesh, loopback, free ports).
struct RunnerOptions {
  std::int64_t n_parallel_workers = 1;
  std::string topology = "mesh";
  std::string protocol = "tcp";
  std::string address = "127.0.0.1";
  std::vector<std::int64_t> ports;
  std::vector<std::int64_t> node_ids;
  std::vector<std::string> attach_to;
  std::vector<std::string> labels;
  bool auto_recover = false;
  std::int64_t max_retries = 3;
  double restart_backoff = 1.0;
  double startup_interval = 0.0;
  double grace_period = 10.0;
  double timeout = 0.0;
  std::string log_dir;
  std::string log_level = "warn";
  std::string roles;  ///< as --roles, e.g. "learner:0,collector:1-"; empty: none
  std::int64_t world_size = 0;          ///< as --world-size (workers of all launchers); 0: this runner's
  std::string mq_type = "nng";          ///< as --mq-type: "nng" (the mesh) or "redis"
  std::string redis_host = "127.0.0.1";  ///< as --redis-host (mq_type "redis")
  std::int64_t redis_port = 6379;        ///< as --redis-port (mq_type "redis")
};

/// Runs a program's `main_fn` as a supervised job. Returned by Parallel::runner.
class Runner {
 public:
  explicit Runner(RunnerOptions options) : options_(std::move(options)) {}
  /// In the launching process: re-executes this program (/proc/self/exe, same argv) as
  /// n_parallel_workers workers with the environment contract, supervises them exactly as the
  /// ditask command does, and returns the job's exit code. In a worker: runs `main_fn` with
  /// task().router() active and returns 0, or 1 when it threw. Code before the runner call
  /// runs in every process. DITASK_RUN_ID, DITASK_TOKEN and DITASK_REDIS_PASSWORD of the
  /// environment are the run id, mesh secret and Redis password, as for ditask; mesh settings
  /// otherwise keep their defaults.
  /// Errors: ditask::Error for invalid options (launching process).
  int operator()(const std::function<void()>& main_fn) const;

 private:
  RunnerOptions options_;
};

/// DI-engine's `Parallel.runner(n_parallel_workers, ...)(main)` for C++ programs:
/// `return ditask::Parallel::runner({.n_parallel_workers = 4})(main_fn);`
class Parallel {
 public:
  /// A runner with these options. Thread: any.
  static Runner runner(RunnerOptions options) { return Runner(std::move(options)); }
  /// True in a process started by a Runner as one of its workers.
  static bool in_worker();
};

}  // namespace ditask
