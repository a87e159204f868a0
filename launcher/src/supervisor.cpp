// SPDX-License-Identifier: MIT
#include "supervisor.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <boost/asio/connect_pipe.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/writable_pipe.hpp>

#include "ditask/launcher/group_signal.hpp"
#include "ditask/runtime/log.hpp"
#include "output.hpp"
#include "process_v2.hpp"
#include "spawn_posix.hpp"
#include "summary.hpp"

namespace ditask::launcher {
namespace {

namespace asio = boost::asio;
namespace bp = boost::process::v2;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

constexpr auto kDrainLimit = std::chrono::seconds(2);   // output after exit, e.g. from grandchildren
constexpr auto kFinalWait = std::chrono::seconds(5);    // after SIGKILL (D-state processes)
constexpr double kBackoffCap = 30.0;

std::chrono::milliseconds seconds(double s) {
  return std::chrono::milliseconds(static_cast<long long>(s * 1000.0));
}

/// One stdout or stderr pipe of one attempt; shared with its pending read.
struct Stream {
  explicit Stream(asio::io_context& ctx, int target_fd) : pipe(ctx), fd(target_fd) {}
  asio::readable_pipe pipe;
  int fd;
  LineSplitter split;
  std::array<char, 65536> buffer;  // not zeroed: 128 KiB of memset per worker showed in profiles
};

struct Worker {
  const WorkerPlan* plan = nullptr;
  std::size_t index = 0;
  int attempt = 0;
  unsigned generation = 0;  // bumps per attempt; stale callbacks compare it
  pid_t pid = -1;
  std::unique_ptr<bp::process> process;
  std::shared_ptr<Stream> out;
  std::shared_ptr<Stream> err;
  std::unique_ptr<WorkerOutput> output;
  int open_streams = 0;
  bool alive = false;           // spawned and its exit not yet seen
  bool exited = false;          // exit seen for this attempt
  int status = 0;               // raw wait status
  bool stop_requested = false;  // the launcher stopped it: never a failure, never restarted
  bool done = false;            // last attempt over (exited and drained, no restart pending)
  bool start_pending = false;   // waiting for its start or restart time
  std::optional<asio::steady_timer> timer;
};

class Supervisor {
 public:
  Supervisor(const Options& options, const Plan& plan, const ListenSockets& sockets,
             const WorkerCommand& command, const std::map<std::string, std::string>& environment)
      : options_(options), plan_(plan), sockets_(sockets), command_(command),
        signals_(ctx_, SIGINT, SIGTERM, SIGQUIT), forwarded_(ctx_, SIGUSR1, SIGUSR2, SIGHUP),
        children_(ctx_, SIGCHLD), grace_timer_(ctx_), final_timer_(ctx_), timeout_timer_(ctx_) {
    // What every worker inherits, computed once: the launcher's environment without stale
    // DITASK_* variables and without the names the contract sets per worker.
    std::set<std::string> contract_names = {"DITASK_ATTEMPT", "DITASK_LISTEN_FD"};
    for (const auto& worker : plan.workers) {
      for (const auto& entry : worker.env) {
        contract_names.insert(entry.first);
      }
    }
    for (const auto& [key, value] : worker_environment(environment, {})) {
      if (contract_names.count(key) == 0) {
        base_env_.push_back(key + "=" + value);
      }
    }
    workers_.resize(plan.workers.size());
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      workers_[i].plan = &plan.workers[i];
      workers_[i].index = i;
      workers_[i].timer.emplace(ctx_);
    }
  }

  int run();

 private:
  void spawn(Worker& w);
  void read(Worker& w, const std::shared_ptr<Stream>& stream);
  void on_exit(Worker& w);
  void on_stream_closed(Worker& w);
  void on_attempt_over(Worker& w);
  void begin_stop(StopCause cause, int sig);
  void kill_remaining();
  void on_signal(int sig);
  void watch_signals();
  void watch_forwarded_signals();
  void watch_children();
  void reap_orphans();
  void check_all_done();
  void start_at(Worker& w, Clock::duration delay);

  asio::io_context ctx_{1};
  const Options& options_;
  const Plan& plan_;
  const ListenSockets& sockets_;
  const WorkerCommand& command_;
  asio::signal_set signals_;
  asio::signal_set forwarded_;
  asio::signal_set children_;
  asio::steady_timer grace_timer_;
  asio::steady_timer final_timer_;
  asio::steady_timer timeout_timer_;
  std::vector<Worker> workers_;
  std::vector<std::string> base_env_;  // KEY=VALUE inherited by every worker
  Report report_;
  int interrupts_ = 0;
  bool all_done_ = false;  // a signal that came before cancel() must not re-arm its watcher
};

int Supervisor::run() {
  // Orphaned grandchildren are re-parented to us, so a worker's helpers cannot outlive the job.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  watch_signals();
  watch_forwarded_signals();
  watch_children();
  for (auto& w : workers_) {
    start_at(w, seconds(options_.startup_interval * static_cast<double>(w.index)));
  }
  if (options_.timeout > 0) {
    timeout_timer_.expires_after(seconds(options_.timeout));
    timeout_timer_.async_wait([this](error_code ec) {
      if (!ec) {
        begin_stop(StopCause::timeout, SIGTERM);
      }
    });
  }
  ctx_.run();
  for (const auto& w : workers_) {
    report_.attempts.push_back(w.attempt);
  }
  print_summary(report_, options_);
  return exit_code(report_);
}

void Supervisor::start_at(Worker& w, Clock::duration delay) {
  if (delay <= Clock::duration::zero()) {
    spawn(w);
    return;
  }
  w.start_pending = true;
  w.timer->expires_after(delay);
  w.timer->async_wait([this, &w](error_code ec) {
    if (!ec && w.start_pending) {
      w.start_pending = false;
      spawn(w);
    }
  });
}

void Supervisor::spawn(Worker& w) {
  std::vector<std::string> env = base_env_;
  for (const auto& [key, value] : w.plan->env) {
    env.push_back(key + "=" + value);
  }
  env.push_back("DITASK_ATTEMPT=" + std::to_string(w.attempt));
  env.push_back("DITASK_LISTEN_FD=" + std::to_string(kListenFd));
  env.push_back("DITASK_LAUNCHER_PID=" + std::to_string(::getpid()));
  ++w.generation;
  w.out = std::make_shared<Stream>(ctx_, STDOUT_FILENO);
  w.err = std::make_shared<Stream>(ctx_, STDERR_FILENO);
  asio::writable_pipe out_w(ctx_);
  asio::writable_pipe err_w(ctx_);
  asio::connect_pipe(w.out->pipe, out_w);
  asio::connect_pipe(w.err->pipe, err_w);
  std::string log_path;
  if (!options_.log_dir.empty()) {
    log_path = options_.log_dir + "/" + plan_.run_id + "/attempt_" + std::to_string(w.attempt) +
               "/node_" + std::to_string(w.plan->node_id) + ".log";
  }
  std::string tag = options_.tag_output ? format_tag(options_.tag_format, w.plan->node_id, w.plan->rank,
                                                     w.plan->local_id, w.attempt)
                                        : std::string();
  try {
    w.output = std::make_unique<WorkerOutput>(tag, log_path);
  } catch (const std::exception& e) {
    // Workers already run: a log file problem is reported, never a reason to exit 2 now.
    w.output = std::make_unique<WorkerOutput>(tag, "");
    w.output->line(STDERR_FILENO, std::string("ditask: warning: ") + e.what());
  }
  // Buffered stdio of ours would be copied into the child and written twice.
  std::cout.flush();
  std::fflush(nullptr);
  w.exited = false;
  w.alive = true;
  try {
    // posix_spawn, not fork: see spawn_posix.hpp. Boost.Process only waits for it.
    const pid_t pid = spawn_worker(SpawnRequest{command_.exe, command_.args, std::move(env), out_w.native_handle(),
                                                err_w.native_handle(), sockets_.fd(w.index)});
    w.process = std::make_unique<bp::process>(ctx_.get_executor(), pid);
  } catch (const std::exception& e) {
    w.output->line(STDERR_FILENO, std::string("ditask: error: cannot start worker: ") + e.what());
    w.alive = false;
    w.exited = true;
    w.status = 127 << 8;  // as a shell reports a command it cannot run
    w.open_streams = 0;
    on_attempt_over(w);
    return;
  }
  w.pid = w.process->id();
  ::setpgid(w.pid, w.pid);  // also here: a signal may come before the child's own setpgid
  out_w.close();
  err_w.close();
  w.open_streams = 2;
  DITASK_LOG(info, "launcher") << "started node " << w.plan->node_id << " (pid " << w.pid
                               << ", attempt " << w.attempt << ")";
  read(w, w.out);
  read(w, w.err);
  const unsigned generation = w.generation;
  w.process->async_wait([this, &w, generation](error_code ec, int) {
    if (generation != w.generation) {
      return;
    }
    w.status = ec ? (255 << 8) : w.process->native_exit_code();
    if (ec) {
      DITASK_LOG(error, "launcher") << "lost the exit status of node " << w.plan->node_id << ": "
                                    << ec.message();
    }
    on_exit(w);
  });
}

void Supervisor::read(Worker& w, const std::shared_ptr<Stream>& stream) {
  const unsigned generation = w.generation;
  stream->pipe.async_read_some(
      asio::buffer(stream->buffer), [this, &w, stream, generation](error_code ec, std::size_t n) {
        if (generation != w.generation) {
          return;
        }
        for (auto& line : stream->split.feed({stream->buffer.data(), n})) {
          w.output->line(stream->fd, line);
        }
        if (!ec) {
          read(w, stream);
          return;
        }
        for (auto& line : stream->split.finish()) {
          w.output->line(stream->fd, line);
        }
        on_stream_closed(w);
      });
}

void Supervisor::on_exit(Worker& w) {
  DITASK_LOG(debug, "launcher") << "node " << w.plan->node_id << " (pid " << w.pid << ") ended, status "
                                << w.status << ", " << w.open_streams << " stream(s) open";
  w.alive = false;
  w.exited = true;
  w.process->detach();
  reap_orphans();
  if (w.open_streams == 0) {
    on_attempt_over(w);
    return;
  }
  // Drain what the worker wrote before it died; a grandchild holding the pipe open gets a bound.
  const unsigned generation = w.generation;
  w.timer->expires_after(kDrainLimit);
  w.timer->async_wait([this, &w, generation](error_code ec) {
    if (!ec && generation == w.generation && w.open_streams > 0) {
      w.out->pipe.close();
      w.err->pipe.close();
    }
  });
}

void Supervisor::on_stream_closed(Worker& w) {
  DITASK_LOG(debug, "launcher") << "node " << w.plan->node_id << ": an output stream closed";
  if (--w.open_streams == 0 && w.exited) {
    w.timer->cancel();
    on_attempt_over(w);
  }
}

void Supervisor::on_attempt_over(Worker& w) {
  const bool ok = WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0;
  if (ok || w.stop_requested || report_.stopping) {
    // During a stop nothing is restarted or decides the exit code; the summary still tells a
    // worker that ended by the launcher's signal (or cleanly) from one that failed on its own.
    const bool by_stop = WIFSIGNALED(w.status) &&
                         (WTERMSIG(w.status) == report_.signal || WTERMSIG(w.status) == SIGKILL);
    if (report_.stopping && !ok && !by_stop) {
      report_.also_failed.push_back(describe_failure(
          Failure{w.plan->node_id, w.pid, w.attempt, w.status, {}, {}}));
    } else if (w.stop_requested) {
      report_.stopped.push_back({w.plan->node_id, w.pid, ok});
    }
    w.done = true;
    check_all_done();
    return;
  }
  Failure failure{w.plan->node_id, w.pid, w.attempt, w.status,
                  {w.output->last_stderr().begin(), w.output->last_stderr().end()}, w.output->log_path()};
  if (options_.auto_recover && w.attempt < options_.max_retries) {
    const double backoff = std::min(kBackoffCap, options_.restart_backoff * double(1 << std::min(w.attempt, 16)));
    DITASK_LOG(warn, "launcher") << describe_failure(failure) << "; restarting in " << backoff << " s ("
                                 << w.attempt + 1 << " of " << options_.max_retries << ")";
    ++w.attempt;
    start_at(w, seconds(backoff));
    return;
  }
  w.done = true;
  report_.failure = std::move(failure);
  begin_stop(StopCause::failure, SIGTERM);
  check_all_done();
}

void Supervisor::begin_stop(StopCause cause, int sig) {
  if (report_.stopping) {
    return;
  }
  report_.stopping = true;
  report_.cause = cause;
  report_.signal = sig;
  timeout_timer_.cancel();
  for (auto& w : workers_) {
    if (w.alive) {
      w.stop_requested = true;
      signal_group(w.pid, sig);
    } else if (w.start_pending) {
      w.start_pending = false;  // a start or restart still pending: never happens now
      w.timer->cancel();
      w.done = true;
    }
  }
  grace_timer_.expires_after(seconds(options_.grace_period));
  grace_timer_.async_wait([this](error_code ec) {
    if (!ec) {
      kill_remaining();
    }
  });
  check_all_done();
}

void Supervisor::kill_remaining() {
  for (auto& w : workers_) {
    if (w.alive) {
      w.stop_requested = true;
      signal_group(w.pid, SIGKILL);
    }
  }
  // A process stuck in the kernel (D state) may never die: wait a bounded time, then give up.
  final_timer_.expires_after(kFinalWait);
  final_timer_.async_wait([this](error_code ec) {
    if (ec) {
      return;
    }
    for (auto& w : workers_) {
      if (w.alive) {
        DITASK_LOG(error, "launcher") << "node " << w.plan->node_id << " (pid " << w.pid
                                      << ") did not exit after SIGKILL; giving up on it";
        report_.stopped.push_back({w.plan->node_id, w.pid, false});
      }
    }
    ctx_.stop();
  });
}

void Supervisor::watch_signals() {
  signals_.async_wait([this](error_code ec, int sig) {
    if (!ec && !all_done_) {
      on_signal(sig);
      watch_signals();
    }
  });
}

void Supervisor::watch_forwarded_signals() {
  forwarded_.async_wait([this](error_code ec, int sig) {
    if (ec || all_done_) {
      return;
    }
    // SIGHUP is ignored (a closed terminal must not end the job); USR1/USR2 reach every worker,
    // where they become events (Slurm's time-limit warning must not kill anything).
    if (sig != SIGHUP) {
      for (auto& w : workers_) {
        if (w.alive) {
          signal_group(w.pid, sig);
        }
      }
    }
    watch_forwarded_signals();
  });
}

void Supervisor::on_signal(int sig) {
  if (sig == SIGINT && ++interrupts_ >= 2) {
    DITASK_LOG(warn, "launcher") << "second SIGINT: killing every worker";
    grace_timer_.cancel();
    kill_remaining();
    return;
  }
  if (!report_.stopping) {
    begin_stop(StopCause::signal, sig);
    return;
  }
  for (auto& w : workers_) {  // already stopping: pass the signal on all the same
    if (w.alive) {
      signal_group(w.pid, sig);
    }
  }
}

void Supervisor::watch_children() {
  children_.async_wait([this](error_code ec, int) {
    if (ec || all_done_) {
      return;
    }
    reap_orphans();
    watch_children();
  });
}

void Supervisor::reap_orphans() {
  // Peek without reaping: a worker's status belongs to its own async_wait.
  while (true) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
      return;
    }
    for (const auto& w : workers_) {
      if (w.alive && w.pid == info.si_pid) {
        return;  // a worker's exit: Process v2 reaps it
      }
    }
    ::waitpid(info.si_pid, nullptr, WNOHANG);
  }
}

void Supervisor::check_all_done() {
  for (const auto& w : workers_) {
    if (!w.done) {
      return;
    }
  }
  DITASK_LOG(debug, "launcher") << "every worker is done";
  all_done_ = true;
  signals_.cancel();
  forwarded_.cancel();
  children_.cancel();
  grace_timer_.cancel();
  final_timer_.cancel();
  timeout_timer_.cancel();
  for (auto& w : workers_) {
    w.timer->cancel();
  }
}

}  // namespace

int supervise(const Options& options, const Plan& plan, const ListenSockets& sockets,
              const WorkerCommand& command, const std::map<std::string, std::string>& environment) {
  Supervisor supervisor(options, plan, sockets, command, environment);
  return supervisor.run();
}

}  // namespace ditask::launcher
