// SPDX-License-Identifier: MIT
// The seams between the supervisor's rules (supervision.hpp) and the world: processes and time.
// The real ones sit on the launcher's Asio loop (process_spawner_posix.hpp, asio_timers.hpp);
// unit tests use fakes that need no process and no clock.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ditask::launcher {

/// What one process used, from the kernel when it was reaped (wait4).
struct ResourceUse {
  double user_seconds = 0;        ///< CPU time in user mode
  double system_seconds = 0;      ///< CPU time in the kernel
  std::int64_t peak_rss_bytes = 0;  ///< largest resident set (of it or of a child it waited for)
};

/// How one attempt of one worker ended, as far as the rules care.
struct AttemptEnd {
  int status = 0;                        ///< raw wait status
  std::vector<std::string> last_stderr;  ///< its last stderr lines, oldest first
  std::string log_path;                  ///< its log file, or empty
  std::optional<ResourceUse> usage;      ///< unset when the process never started
};

/// What a spawn did: a pid, or the end of an attempt that never started.
struct SpawnResult {
  pid_t pid = -1;
  std::optional<AttemptEnd> failed;  ///< set when the process could not be started
};

/// Told about the processes a ProcessSpawner started. Thread: the supervisor's loop.
class SpawnEvents {
 public:
  virtual ~SpawnEvents() = default;
  /// The process of `worker` ended (its output may still be draining).
  virtual void exited(std::size_t worker, int status) = 0;
  /// After exited(): its output is drained, the attempt is over.
  virtual void attempt_over(std::size_t worker, AttemptEnd end) = 0;
};

/// Starts and signals worker processes. Thread: the supervisor's loop.
class ProcessSpawner {
 public:
  virtual ~ProcessSpawner() = default;
  /// Starts attempt `attempt` of local worker `worker`; never throws for a process that cannot start.
  virtual SpawnResult spawn(std::size_t worker, int attempt) = 0;
  /// Sends `sig` to the worker's process group.
  virtual void signal(std::size_t worker, int sig) = 0;
  /// The worker will never start again (it exited 0): what was kept for its restarts (its
  /// listening socket) goes, so a peer that dials it is refused at once, and workers started
  /// from now on are told it finished (DITASK_FINISHED_NODES), so they do not wait for it.
  virtual void retire(std::size_t worker) = 0;
};

/// One-shot timers: the only way time reaches the rules. Thread: the supervisor's loop.
class Timers {
 public:
  using Id = std::uint64_t;
  virtual ~Timers() = default;
  /// Calls `fire` once after `delay` (on the loop), unless cancelled first. Never 0.
  virtual Id after(std::chrono::milliseconds delay, std::function<void()> fire) = 0;
  /// Cancels a pending timer; a no-op for one that fired or is unknown.
  virtual void cancel(Id id) = 0;
};

}  // namespace ditask::launcher
