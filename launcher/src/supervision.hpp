// SPDX-License-Identifier: MIT
// The supervisor's rules, with no process and no clock of their own: staggered starts, restarts
// with backoff (--auto-recover), fail-fast, the job timeout, signals, the grace period and the
// exit code. Processes come through a ProcessSpawner, time through Timers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ditask/launcher/options.hpp"
#include "process_spawner.hpp"
#include "summary.hpp"

namespace ditask::launcher {

/// The options the rules read, in milliseconds.
struct SupervisionPolicy {
  std::chrono::milliseconds startup_interval{0};  ///< between local worker starts
  std::chrono::milliseconds timeout{0};           ///< the whole job; 0 = none
  std::chrono::milliseconds grace_period{10'000}; ///< SIGTERM to SIGKILL
  std::chrono::milliseconds final_wait{5'000};    ///< SIGKILL to giving up on a process
  bool auto_recover = false;
  int max_retries = 3;
  std::chrono::milliseconds restart_backoff{1000};  ///< doubles per retry
  std::chrono::milliseconds backoff_cap{30'000};

  /// The policy of a resolved launch request.
  static SupervisionPolicy from(const Options& options);
};

/// The rules for one launcher's local workers. Thread: one loop (every call, every callback).
class Supervision final : public SpawnEvents {
 public:
  /// `node_ids[i]` is local worker i's node id. `spawner` and `timers` outlive this object.
  Supervision(SupervisionPolicy policy, std::vector<std::int64_t> node_ids, ProcessSpawner& spawner,
              Timers& timers);

  /// Called once when every worker is done (the loop may end), or when a process did not die
  /// after SIGKILL within the final wait (`gave_up`).
  void on_finished(std::function<void(bool gave_up)> callback) { finished_ = std::move(callback); }

  /// Starts (or schedules) every worker and the job timeout.
  void start();
  /// SIGINT, SIGTERM or SIGQUIT reached the launcher: stop the job (a second SIGINT kills).
  void on_stop_signal(int sig);
  /// SIGUSR1/SIGUSR2 reach every running worker; SIGHUP is ignored.
  void on_forwarded_signal(int sig);

  // SpawnEvents
  void exited(std::size_t worker, int status) override;
  void attempt_over(std::size_t worker, AttemptEnd end) override;

  /// True once every worker's last attempt is over.
  bool all_done() const noexcept { return all_done_; }
  /// True while worker `i` has a live process.
  bool alive(std::size_t i) const { return workers_.at(i).alive; }
  /// Worker `i`'s current (or last) attempt.
  int attempt(std::size_t i) const { return workers_.at(i).attempt; }
  /// How many workers run, wait for a restart, or are done (for the status line).
  struct Counts {
    int running = 0;
    int restarting = 0;
    int done = 0;
  };
  Counts counts() const;
  /// What happened, for the summary (workers filled in once all are done).
  const Report& report() const noexcept { return report_; }
  /// The job's exit code so far (final once all_done()).
  int exit_code() const { return launcher::exit_code(report_); }

 private:
  struct Worker {
    std::int64_t node_id = 0;
    int attempt = 0;
    pid_t pid = -1;
    bool alive = false;           // spawned and its exit not yet seen
    int status = 0;               // raw wait status of the last exit
    bool stop_requested = false;  // the launcher stopped it: never a failure, never restarted
    bool done = false;            // last attempt over, no restart pending
    std::optional<Timers::Id> start_timer;  // a start or restart is pending
    std::vector<AttemptRecord> ended;       // for the report
  };

  void start_after(std::size_t i, std::chrono::milliseconds delay);
  void spawn(std::size_t i);
  void begin_stop(StopCause cause, int sig);
  void kill_remaining();
  void check_all_done();
  void record_workers(bool gave_up);
  void cancel(std::optional<Timers::Id>& timer);

  const SupervisionPolicy policy_;
  ProcessSpawner& spawner_;
  Timers& timers_;
  std::vector<Worker> workers_;
  Report report_;
  std::function<void(bool)> finished_;
  std::optional<Timers::Id> grace_timer_, final_timer_, timeout_timer_;
  int interrupts_ = 0;
  bool all_done_ = false;
};

}  // namespace ditask::launcher
