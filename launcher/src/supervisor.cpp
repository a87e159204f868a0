// SPDX-License-Identifier: MIT
#include "supervisor.hpp"

#include <sys/prctl.h>

#include <chrono>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "process_spawner_posix.hpp"
#include "ditask/runtime/log.hpp"
#include "summary.hpp"
#include "summary_json.hpp"
#include "supervision.hpp"

namespace ditask::launcher {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

/// The loop: real processes and timers for the rules, and the launcher's signals.
class Supervisor {
 public:
  Supervisor(const Options& options, const Plan& plan, ListenSockets& sockets, const WorkerCommand& command,
             const std::map<std::string, std::string>& environment)
      : options_(options), plan_(plan), stats_(stats_folder(options)), timers_(ctx_),
        spawner_(ctx_, options, plan, sockets, command, environment, relay_, stats_.get()),
        rules_(SupervisionPolicy::from(options), node_ids(plan), spawner_, timers_),
        signals_(ctx_, SIGINT, SIGTERM, SIGQUIT), forwarded_(ctx_, SIGUSR1, SIGUSR2, SIGHUP),
        children_(ctx_, SIGCHLD) {
    relay_.to = &rules_;
  }

  int run() {
    // Orphaned grandchildren are re-parented to us, so a worker's helpers cannot outlive the job.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    rules_.on_finished([this](bool gave_up) {
      signals_.cancel();
      forwarded_.cancel();
      children_.cancel();
      timers_.cancel_all();
      if (gave_up) {
        ctx_.stop();
      }
    });
    watch(signals_, [this](int sig) { rules_.on_stop_signal(sig); });
    watch(forwarded_, [this](int sig) { rules_.on_forwarded_signal(sig); });
    watch(children_, [this](int) { spawner_.reap(); });
    rules_.start();
    ctx_.run();
    print_summary(rules_.report(), options_);
    write_summary();
    return rules_.exit_code();
  }

 private:
  // Exits and drained attempts go to the rules, which are built after the spawner.
  struct Relay final : SpawnEvents {
    SpawnEvents* to = nullptr;
    void exited(std::size_t worker, int status) override { to->exited(worker, status); }
    void attempt_over(std::size_t worker, AttemptEnd end) override { to->attempt_over(worker, std::move(end)); }
  };

  static std::unique_ptr<WorkerStatsFolder> stats_folder(const Options& options) {
    return options.summary_json.empty() ? nullptr : std::make_unique<WorkerStatsFolder>();
  }

  /// --summary-json: the job has run, so a failed write is a warning, never another exit code.
  void write_summary() {
    if (!stats_) {
      return;
    }
    const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    const std::string path = summary_path(options_.summary_json, plan_);
    try {
      write_summary_json(path, summary_json(rules_.report(), plan_, elapsed, *stats_));
    } catch (const std::exception& e) {
      DITASK_LOG(warn, "launcher") << e.what();
    }
  }

  static std::vector<std::int64_t> node_ids(const Plan& plan) {
    std::vector<std::int64_t> ids;
    for (const auto& w : plan.workers) {
      ids.push_back(w.node_id);
    }
    return ids;
  }

  template <typename Handler>
  void watch(asio::signal_set& set, Handler handler) {
    set.async_wait([this, &set, handler](error_code ec, int sig) {
      if (ec || rules_.all_done()) {
        return;
      }
      handler(sig);
      if (!rules_.all_done()) {  // a signal can end the job itself (no worker left to wait for)
        watch(set, handler);
      }
    });
  }

  asio::io_context ctx_{1};
  const Options& options_;
  const Plan& plan_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<WorkerStatsFolder> stats_;  // with --summary-json
  Relay relay_;
  AsioTimers timers_;
  PosixProcessSpawner spawner_;
  Supervision rules_;
  asio::signal_set signals_;
  asio::signal_set forwarded_;
  asio::signal_set children_;
};

}  // namespace

int supervise(const Options& options, const Plan& plan, ListenSockets& sockets,
              const WorkerCommand& command, const std::map<std::string, std::string>& environment) {
  Supervisor supervisor(options, plan, sockets, command, environment);
  return supervisor.run();
}

}  // namespace ditask::launcher
