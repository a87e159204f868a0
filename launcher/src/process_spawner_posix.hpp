// SPDX-License-Identifier: MIT
// The real ProcessSpawner and Timers: worker processes with piped, tagged output on the
// launcher's Asio loop, and Asio steady timers.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "ditask/launcher/launch.hpp"
#include "ditask/launcher/plan.hpp"
#include "listen_sockets.hpp"
#include "process_spawner.hpp"
#include "summary_json.hpp"

namespace ditask::launcher {

/// Timers on an io_context. Thread: the context's.
class AsioTimers final : public Timers {
 public:
  explicit AsioTimers(boost::asio::io_context& ctx) : ctx_(ctx) {}
  Id after(std::chrono::milliseconds delay, std::function<void()> fire) override;
  void cancel(Id id) override;
  /// Cancels every pending timer (the loop is ending).
  void cancel_all();

 private:
  boost::asio::io_context& ctx_;
  Id next_ = 0;
  std::map<Id, std::shared_ptr<boost::asio::steady_timer>> pending_;
};

/// Starts each planned worker with posix_spawn (spawn_posix.hpp), its stdout and stderr piped
/// through WorkerOutput (tags, log files, the last stderr lines), and watches its exit.
/// Reaps orphans re-parented to the launcher. Thread: the io_context's.
class PosixProcessSpawner final : public ProcessSpawner {
 public:
  /// `events` is told of exits and drained attempts; every reference outlives this object, as
  /// does `stats` (with --summary-json or --status: each attempt gets its file as
  /// DITASK_STATS_FILE, rewritten every `stats_period` while it runs when that is not 0).
  PosixProcessSpawner(boost::asio::io_context& ctx, const Options& options, const Plan& plan,
                      ListenSockets& sockets, const WorkerCommand& command,
                      const std::map<std::string, std::string>& environment, SpawnEvents& events,
                      const WorkerStatsFolder* stats = nullptr,
                      std::chrono::milliseconds stats_period = std::chrono::milliseconds(0));
  ~PosixProcessSpawner() override;

  SpawnResult spawn(std::size_t worker, int attempt) override;
  void signal(std::size_t worker, int sig) override;
  void retire(std::size_t worker) override;
  /// What the launcher saw of one worker, for --trace: a start or an exit, at a wall-clock time.
  struct Mark {
    std::uint64_t ts_ns = 0;
    std::int64_t node_id = 0;
    std::string what;  ///< "start (attempt 1)", "exit code 3", "killed by SIGSEGV"
  };
  /// The marks so far, oldest first (recorded only with --trace).
  const std::vector<Mark>& marks() const noexcept { return marks_; }

  /// Reaps every exited child (call on SIGCHLD): a worker's exit, with its status and resource
  /// use, goes to the events; an orphan re-parented to the launcher just goes.
  void reap();

 private:
  struct Child;
  struct Stream;
  void read(Child& c, const std::shared_ptr<Stream>& stream);
  void on_exit(Child& c, int status, const ResourceUse& usage);
  void on_stream_closed(Child& c);
  void attempt_over(Child& c);

  boost::asio::io_context& ctx_;
  const Options& options_;
  const Plan& plan_;
  ListenSockets& sockets_;
  std::string finished_nodes_;  // the retired workers' node ids, "0,3": DITASK_FINISHED_NODES
  const WorkerCommand& command_;
  SpawnEvents& events_;
  const WorkerStatsFolder* stats_;
  std::chrono::milliseconds stats_period_;
  std::vector<Mark> marks_;
  std::vector<std::string> base_env_;  // KEY=VALUE inherited by every worker
  std::vector<std::unique_ptr<Child>> children_;
};

}  // namespace ditask::launcher
