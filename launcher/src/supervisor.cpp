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
#include "live_status.hpp"
#include "status_line.hpp"
#include "summary_json.hpp"
#include "supervision.hpp"
#include "trace_merge.hpp"

namespace ditask::launcher {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

/// The loop: real processes and timers for the rules, and the launcher's signals.
class Supervisor {
 public:
  Supervisor(const Options& options, const Plan& plan, ListenSockets& sockets, const WorkerCommand& command,
             const std::map<std::string, std::string>& environment)
      : options_(options), plan_(plan), status_wanted_(status_wanted(options.status, STDERR_FILENO)),
        stats_(stats_folder(options, status_wanted_)), timers_(ctx_),
        spawner_(ctx_, options, plan, sockets, command, environment, relay_, stats_.get(),
                 status_wanted_ ? kStatusPeriod : std::chrono::milliseconds(0)),
        rules_(SupervisionPolicy::from(options), node_ids(plan), spawner_, timers_),
        signals_(ctx_, SIGINT, SIGTERM, SIGQUIT), forwarded_(ctx_, SIGUSR1, SIGUSR2, SIGHUP),
        children_(ctx_, SIGCHLD) {
    relay_.to = &rules_;
  }

  int run() {
    // Orphaned grandchildren are re-parented to us, so a worker's helpers cannot outlive the job.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    rules_.on_finished([this](bool gave_up) {
      status_timer_.cancel();
      status_.reset();  // gone before the summary
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
    if (status_wanted_ && stats_) {
      status_ = std::make_unique<StatusLine>(STDERR_FILENO);
      live_ = std::make_unique<LiveStatus>(plan_, rules_, *stats_);
    }
    rules_.start();
    refresh_status();
    ctx_.run();
    status_.reset();
    print_summary(rules_.report(), options_);
    write_summary();
    write_trace_file();
    return rules_.exit_code();
  }

 private:
  // Exits and drained attempts go to the rules, which are built after the spawner.
  struct Relay final : SpawnEvents {
    SpawnEvents* to = nullptr;
    void exited(std::size_t worker, int status) override { to->exited(worker, status); }
    void attempt_over(std::size_t worker, AttemptEnd end) override { to->attempt_over(worker, std::move(end)); }
  };

  static constexpr std::chrono::milliseconds kStatusPeriod{1000};

  static std::unique_ptr<WorkerStatsFolder> stats_folder(const Options& options, bool status) {
    const bool needed = !options.summary_json.empty() || !options.trace.empty();
    if (!needed && !status) {
      return nullptr;
    }
    try {
      return std::make_unique<WorkerStatsFolder>();
    } catch (const std::exception& e) {
      if (needed) {
        throw;
      }
      // Only the status line wanted it: the job runs without the line.
      DITASK_LOG(warn, "launcher") << e.what() << "; no status line";
      return nullptr;
    }
  }

  /// Redraws the status line now and every kStatusPeriod until the job ends.
  void refresh_status() {
    if (!status_ || rules_.all_done()) {
      return;
    }
    status_->show(format_status(live_->sample()));
    status_timer_.expires_after(kStatusPeriod);
    status_timer_.async_wait([this](error_code ec) {
      if (!ec) {
        refresh_status();
      }
    });
  }

  /// --summary-json: the job has run, so a failed write is a warning, never another exit code.
  void write_summary() {
    if (options_.summary_json.empty()) {
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

  /// --trace: the merged trace, written like the summary (a failure is a warning).
  void write_trace_file() {
    if (options_.trace.empty()) {
      return;
    }
    try {
      write_trace(summary_path(options_.trace, plan_), plan_, rules_.report(), *stats_, spawner_.marks());
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
  const bool status_wanted_;
  std::unique_ptr<WorkerStatsFolder> stats_;  // with --summary-json or the status line
  Relay relay_;
  AsioTimers timers_;
  PosixProcessSpawner spawner_;
  Supervision rules_;
  asio::signal_set signals_;
  asio::signal_set forwarded_;
  asio::signal_set children_;
  asio::steady_timer status_timer_{ctx_};
  std::unique_ptr<StatusLine> status_;  // while shown
  std::unique_ptr<LiveStatus> live_;
};

}  // namespace

int supervise(const Options& options, const Plan& plan, ListenSockets& sockets,
              const WorkerCommand& command, const std::map<std::string, std::string>& environment) {
  Supervisor supervisor(options, plan, sockets, command, environment);
  return supervisor.run();
}

}  // namespace ditask::launcher
