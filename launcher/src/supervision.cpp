// SPDX-License-Identifier: MIT
#include "supervision.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <limits>

#include "ditask/runtime/log.hpp"

namespace ditask::launcher {
namespace {

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
}

double seconds_of(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

}  // namespace

SupervisionPolicy SupervisionPolicy::from(const Options& options) {
  SupervisionPolicy p;
  p.startup_interval = millis(options.startup_interval);
  p.timeout = millis(options.timeout);
  p.grace_period = millis(options.grace_period);
  p.auto_recover = options.auto_recover;
  p.max_retries = static_cast<int>(std::clamp<std::int64_t>(options.max_retries, 0, std::numeric_limits<int>::max()));
  p.restart_backoff = millis(options.restart_backoff);
  return p;
}

Supervision::Supervision(SupervisionPolicy policy, std::vector<std::int64_t> node_ids, ProcessSpawner& spawner,
                         Timers& timers)
    : policy_(policy), spawner_(spawner), timers_(timers) {
  workers_.resize(node_ids.size());
  for (std::size_t i = 0; i < node_ids.size(); ++i) {
    workers_[i].node_id = node_ids[i];
  }
}

void Supervision::start() {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    start_after(i, policy_.startup_interval * static_cast<long long>(i));
  }
  if (policy_.timeout.count() > 0) {
    timeout_timer_ = timers_.after(policy_.timeout, [this] {
      timeout_timer_.reset();
      begin_stop(StopCause::timeout, SIGTERM);
    });
  }
  check_all_done();  // a job without workers
}

void Supervision::cancel(std::optional<Timers::Id>& timer) {
  if (timer) {
    timers_.cancel(*timer);
    timer.reset();
  }
}

void Supervision::start_after(std::size_t i, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) {
    spawn(i);
    return;
  }
  workers_[i].start_timer = timers_.after(delay, [this, i] {
    workers_[i].start_timer.reset();
    spawn(i);
  });
}

void Supervision::spawn(std::size_t i) {
  Worker& w = workers_[i];
  if (report_.stopping) {  // an earlier worker's failed start stopped the job within start()
    w.done = true;
    check_all_done();
    return;
  }
  SpawnResult started = spawner_.spawn(i, w.attempt);
  if (started.failed) {
    w.pid = -1;
    w.status = started.failed->status;
    attempt_over(i, std::move(*started.failed));
    return;
  }
  w.pid = started.pid;
  w.alive = true;
  DITASK_LOG(info, "launcher") << "started node " << w.node_id << " (pid " << w.pid << ", attempt " << w.attempt
                               << ")";
}

void Supervision::exited(std::size_t i, int status) {
  Worker& w = workers_.at(i);
  w.alive = false;
  w.status = status;
}

void Supervision::attempt_over(std::size_t i, AttemptEnd end) {
  Worker& w = workers_.at(i);
  w.alive = false;
  w.status = end.status;
  w.ended.push_back(AttemptRecord{w.attempt, w.pid, end.status, end.usage});
  const bool ok = WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0;
  if (ok || w.stop_requested || report_.stopping) {
    // During a stop nothing is restarted or decides the exit code; the summary still tells a
    // worker that ended by the launcher's signal (or cleanly) from one that failed on its own.
    const bool by_stop =
        WIFSIGNALED(w.status) && (WTERMSIG(w.status) == report_.signal || WTERMSIG(w.status) == SIGKILL);
    if (report_.stopping && !ok && !by_stop) {
      report_.also_failed.push_back(describe_failure(Failure{w.node_id, w.pid, w.attempt, w.status, {}, {}}));
    } else if (w.stop_requested) {
      report_.stopped.push_back({w.node_id, w.pid, ok});
    }
    if (ok) {
      spawner_.retire(i);  // a clean exit is final: nothing is kept for a restart
    }
    w.done = true;
    check_all_done();
    return;
  }
  Failure failure{w.node_id, w.pid, w.attempt, w.status, std::move(end.last_stderr), std::move(end.log_path)};
  if (policy_.auto_recover && w.attempt < policy_.max_retries) {
    const std::chrono::milliseconds backoff =
        std::min<std::chrono::milliseconds>(policy_.backoff_cap, policy_.restart_backoff * (1LL << std::min(w.attempt, 16)));
    DITASK_LOG(warn, "launcher") << describe_failure(failure) << "; restarting in " << seconds_of(backoff) << " s ("
                                 << w.attempt + 1 << " of " << policy_.max_retries << ")";
    ++w.attempt;
    start_after(i, backoff);
    return;
  }
  w.done = true;
  report_.failure = std::move(failure);
  begin_stop(StopCause::failure, SIGTERM);
  check_all_done();
}

void Supervision::begin_stop(StopCause cause, int sig) {
  if (report_.stopping) {
    return;
  }
  report_.stopping = true;
  report_.cause = cause;
  report_.signal = sig;
  cancel(timeout_timer_);
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = workers_[i];
    if (w.alive) {
      w.stop_requested = true;
      spawner_.signal(i, sig);
    } else if (w.start_timer) {
      cancel(w.start_timer);  // a start or restart still pending: never happens now
      if (!w.ended.empty()) {
        w.attempt = w.ended.back().attempt;  // the cancelled restart is no attempt
      }
      w.done = true;
    }
  }
  grace_timer_ = timers_.after(policy_.grace_period, [this] {
    grace_timer_.reset();
    kill_remaining();
  });
  check_all_done();
}

void Supervision::kill_remaining() {
  if (all_done_) {
    return;
  }
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].alive) {
      workers_[i].stop_requested = true;
      spawner_.signal(i, SIGKILL);
    }
  }
  // A process stuck in the kernel (D state) may never die: wait a bounded time, then give up.
  cancel(final_timer_);
  final_timer_ = timers_.after(policy_.final_wait, [this] {
    final_timer_.reset();
    for (auto& w : workers_) {
      if (w.alive) {
        DITASK_LOG(error, "launcher") << "node " << w.node_id << " (pid " << w.pid
                                      << ") did not exit after SIGKILL; giving up on it";
        report_.stopped.push_back({w.node_id, w.pid, false});
      }
    }
    record_workers(true);
    all_done_ = true;
    cancel(grace_timer_);
    if (finished_) {
      finished_(true);
    }
  });
}

void Supervision::on_stop_signal(int sig) {
  if (all_done_) {
    return;
  }
  if (sig == SIGINT && ++interrupts_ >= 2) {
    DITASK_LOG(warn, "launcher") << "second SIGINT: killing every worker";
    cancel(grace_timer_);
    kill_remaining();
    return;
  }
  if (!report_.stopping) {
    begin_stop(StopCause::signal, sig);
    return;
  }
  for (std::size_t i = 0; i < workers_.size(); ++i) {  // already stopping: pass the signal on all the same
    if (workers_[i].alive) {
      spawner_.signal(i, sig);
    }
  }
}

void Supervision::on_forwarded_signal(int sig) {
  // SIGHUP is ignored (a closed terminal must not end the job); USR1/USR2 reach every worker,
  // where they become events (Slurm's time-limit warning must not kill anything).
  if (all_done_ || sig == SIGHUP) {
    return;
  }
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].alive) {
      spawner_.signal(i, sig);
    }
  }
}

void Supervision::check_all_done() {
  if (all_done_ || !std::all_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.done; })) {
    return;
  }
  DITASK_LOG(debug, "launcher") << "every worker is done";
  all_done_ = true;
  record_workers(false);
  cancel(grace_timer_);
  cancel(final_timer_);
  cancel(timeout_timer_);
  if (finished_) {
    finished_(false);
  }
}

Supervision::Counts Supervision::counts() const {
  Counts c;
  for (const auto& w : workers_) {
    if (w.alive) {
      ++c.running;
    } else if (w.done) {
      ++c.done;
    } else if (w.attempt > 0) {
      ++c.restarting;  // its restart is pending (a first start pending counts nowhere)
    }
  }
  return c;
}

void Supervision::record_workers(bool gave_up) {
  for (const auto& w : workers_) {
    report_.workers.push_back(WorkerRecord{w.node_id, w.attempt, w.ended, w.stop_requested, gave_up && w.alive});
  }
}

}  // namespace ditask::launcher
