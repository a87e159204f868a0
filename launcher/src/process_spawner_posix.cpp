// SPDX-License-Identifier: MIT
#include "process_spawner_posix.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include <boost/asio/connect_pipe.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/writable_pipe.hpp>

#include "ditask/launcher/group_signal.hpp"
#include "ditask/runtime/log.hpp"
#include "output.hpp"
#include "spawn_posix.hpp"

namespace ditask::launcher {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
constexpr auto kDrainLimit = std::chrono::seconds(2);  // output after exit, e.g. from grandchildren

std::uint64_t wall_clock_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

ResourceUse usage_of(const rusage& r) {
  // Linux reports ru_maxrss in KiB.
  return ResourceUse{seconds_of(r.ru_utime), seconds_of(r.ru_stime), static_cast<std::int64_t>(r.ru_maxrss) * 1024};
}
}  // namespace

Timers::Id AsioTimers::after(std::chrono::milliseconds delay, std::function<void()> fire) {
  const Id id = ++next_;
  auto timer = std::make_shared<asio::steady_timer>(ctx_, delay);
  pending_[id] = timer;
  timer->async_wait([this, id, fire = std::move(fire)](error_code ec) {
    if (ec || pending_.erase(id) == 0) {
      return;
    }
    fire();
  });
  return id;
}

void AsioTimers::cancel(Id id) {
  if (auto it = pending_.find(id); it != pending_.end()) {
    it->second->cancel();
    pending_.erase(it);
  }
}

void AsioTimers::cancel_all() {
  for (auto& [id, timer] : pending_) {
    timer->cancel();
  }
  pending_.clear();
}

/// One stdout or stderr pipe of one attempt; shared with its pending read.
struct PosixProcessSpawner::Stream {
  Stream(asio::io_context& ctx, int target_fd) : pipe(ctx), fd(target_fd) {}
  asio::readable_pipe pipe;
  int fd;
  LineSplitter split;
  std::array<char, 65536> buffer;  // not zeroed: 128 KiB of memset per worker showed in profiles
};

/// One local worker's current attempt.
struct PosixProcessSpawner::Child {
  Child(asio::io_context& ctx, const WorkerPlan& p, std::size_t i) : plan(&p), index(i), drain_timer(ctx) {}
  const WorkerPlan* plan;
  std::size_t index;
  unsigned generation = 0;  // bumps per attempt; stale callbacks compare it
  pid_t pid = -1;
  std::shared_ptr<Stream> out;
  std::shared_ptr<Stream> err;
  std::unique_ptr<WorkerOutput> output;
  int open_streams = 0;
  bool alive = false;
  bool exited = false;
  int status = 0;
  ResourceUse usage;
  asio::steady_timer drain_timer;
};

PosixProcessSpawner::PosixProcessSpawner(asio::io_context& ctx, const Options& options, const Plan& plan,
                                         ListenSockets& sockets, const WorkerCommand& command,
                                         const std::map<std::string, std::string>& environment, SpawnEvents& events,
                                         const WorkerStatsFolder* stats, std::chrono::milliseconds stats_period)
    : ctx_(ctx), options_(options), plan_(plan), sockets_(sockets), command_(command), events_(events),
      stats_(stats), stats_period_(stats_period) {
  // What every worker inherits, computed once: the launcher's environment without stale
  // DITASK_* variables and without the names the contract sets per worker.
  std::set<std::string> contract_names = {"DITASK_ATTEMPT", "DITASK_LISTEN_FD", "DITASK_FINISHED_NODES",
                                          "DITASK_STATS_FILE", "DITASK_STATS_PERIOD_MS", "DITASK_TRACE_FILE"};
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
  for (std::size_t i = 0; i < plan.workers.size(); ++i) {
    children_.push_back(std::make_unique<Child>(ctx_, plan.workers[i], i));
  }
}

PosixProcessSpawner::~PosixProcessSpawner() = default;

SpawnResult PosixProcessSpawner::spawn(std::size_t worker, int attempt) {
  Child& c = *children_.at(worker);
  std::vector<std::string> env = base_env_;
  for (const auto& [key, value] : c.plan->env) {
    env.push_back(key + "=" + value);
  }
  env.push_back("DITASK_ATTEMPT=" + std::to_string(attempt));
  if (!finished_nodes_.empty()) {
    env.push_back("DITASK_FINISHED_NODES=" + finished_nodes_);  // a restart expects none of them
  }
  env.push_back("DITASK_LISTEN_FD=" + std::to_string(kListenFd));
  env.push_back("DITASK_LAUNCHER_PID=" + std::to_string(::getpid()));
  if (stats_ != nullptr) {
    env.push_back("DITASK_STATS_FILE=" + stats_->file_for(c.plan->node_id, attempt));
    if (stats_period_.count() > 0) {
      env.push_back("DITASK_STATS_PERIOD_MS=" + std::to_string(stats_period_.count()));
    }
    if (!options_.trace.empty()) {
      env.push_back("DITASK_TRACE_FILE=" + stats_->trace_file_for(c.plan->node_id, attempt));
    }
  }
  ++c.generation;
  c.out = std::make_shared<Stream>(ctx_, STDOUT_FILENO);
  c.err = std::make_shared<Stream>(ctx_, STDERR_FILENO);
  asio::writable_pipe out_w(ctx_);
  asio::writable_pipe err_w(ctx_);
  asio::connect_pipe(c.out->pipe, out_w);
  asio::connect_pipe(c.err->pipe, err_w);
  std::string log_path;
  if (!options_.log_dir.empty()) {
    log_path = options_.log_dir + "/" + plan_.run_id + "/attempt_" + std::to_string(attempt) + "/node_" +
               std::to_string(c.plan->node_id) + ".log";
  }
  const std::string tag = options_.tag_output ? format_tag(options_.tag_format, c.plan->node_id, c.plan->rank,
                                                           c.plan->local_id, attempt)
                                              : std::string();
  try {
    c.output = std::make_unique<WorkerOutput>(tag, log_path);
  } catch (const std::exception& e) {
    // Workers already run: a log file problem is reported, never a reason to exit 2 now.
    c.output = std::make_unique<WorkerOutput>(tag, "");
    c.output->line(STDERR_FILENO, std::string("ditask: warning: ") + e.what());
  }
  // Buffered stdio of ours would be copied into the child and written twice.
  std::cout.flush();
  std::fflush(nullptr);
  c.exited = false;
  try {
    // posix_spawn, not fork: see spawn_posix.hpp. Its exit is reaped by reap() on SIGCHLD.
    c.pid = spawn_worker(SpawnRequest{command_.exe, command_.args, std::move(env), out_w.native_handle(),
                                      err_w.native_handle(), sockets_.fd(worker)});
  } catch (const std::exception& e) {
    c.output->line(STDERR_FILENO, std::string("ditask: error: cannot start worker: ") + e.what());
    c.alive = false;
    c.exited = true;
    c.open_streams = 0;
    AttemptEnd end{127 << 8, {c.output->last_stderr().begin(), c.output->last_stderr().end()},
                   c.output->log_path(), std::nullopt};  // 127: as a shell reports a command it cannot run
    return SpawnResult{-1, std::move(end)};
  }
  c.alive = true;
  if (!options_.trace.empty()) {
    marks_.push_back(Mark{wall_clock_ns(), c.plan->node_id, "start (attempt " + std::to_string(attempt) + ")"});
  }
  ::setpgid(c.pid, c.pid);  // also here: a signal may come before the child's own setpgid
  out_w.close();
  err_w.close();
  c.open_streams = 2;
  read(c, c.out);
  read(c, c.err);
  return SpawnResult{c.pid, std::nullopt};
}

void PosixProcessSpawner::signal(std::size_t worker, int sig) {
  const Child& c = *children_.at(worker);
  if (c.alive) {
    signal_group(c.pid, sig);
  }
}

void PosixProcessSpawner::retire(std::size_t worker) {
  sockets_.close(worker);
  if (!finished_nodes_.empty()) {
    finished_nodes_ += ',';
  }
  finished_nodes_ += std::to_string(children_.at(worker)->plan->node_id);
}

void PosixProcessSpawner::read(Child& c, const std::shared_ptr<Stream>& stream) {
  const unsigned generation = c.generation;
  stream->pipe.async_read_some(
      asio::buffer(stream->buffer), [this, &c, stream, generation](error_code ec, std::size_t n) {
        if (generation != c.generation) {
          return;
        }
        for (auto& line : stream->split.feed({stream->buffer.data(), n})) {
          c.output->line(stream->fd, line);
        }
        if (!ec) {
          read(c, stream);
          return;
        }
        for (auto& line : stream->split.finish()) {
          c.output->line(stream->fd, line);
        }
        on_stream_closed(c);
      });
}

void PosixProcessSpawner::on_exit(Child& c, int status, const ResourceUse& usage) {
  DITASK_LOG(debug, "launcher") << "node " << c.plan->node_id << " (pid " << c.pid << ") ended, status " << status
                                << ", " << c.open_streams << " stream(s) open";
  c.alive = false;
  c.exited = true;
  c.status = status;
  c.usage = usage;
  if (!options_.trace.empty()) {
    marks_.push_back(Mark{wall_clock_ns(), c.plan->node_id,
                          WIFSIGNALED(status) ? "killed by " + signal_name(WTERMSIG(status))
                                              : "exit code " + std::to_string(WEXITSTATUS(status))});
  }
  events_.exited(c.index, status);
  if (c.open_streams == 0) {
    attempt_over(c);
    return;
  }
  // Drain what the worker wrote before it died; a grandchild holding the pipe open gets a bound.
  const unsigned generation = c.generation;
  c.drain_timer.expires_after(kDrainLimit);
  c.drain_timer.async_wait([&c, generation](error_code ec) {
    if (!ec && generation == c.generation && c.open_streams > 0) {
      c.out->pipe.close();
      c.err->pipe.close();
    }
  });
}

void PosixProcessSpawner::on_stream_closed(Child& c) {
  DITASK_LOG(debug, "launcher") << "node " << c.plan->node_id << ": an output stream closed";
  if (--c.open_streams == 0 && c.exited) {
    c.drain_timer.cancel();
    attempt_over(c);
  }
}

void PosixProcessSpawner::attempt_over(Child& c) {
  events_.attempt_over(c.index, AttemptEnd{c.status,
                                           {c.output->last_stderr().begin(), c.output->last_stderr().end()},
                                           c.output->log_path(), c.usage});
}

void PosixProcessSpawner::reap() {
  // Peek first (WNOWAIT): a worker is reaped with wait4 for its resource use, any other child
  // (an orphan re-parented to this subreaper) just goes.
  while (true) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
      return;
    }
    Child* worker = nullptr;
    for (const auto& c : children_) {
      if (c->alive && c->pid == info.si_pid) {
        worker = c.get();
      }
    }
    int status = 0;
    rusage use{};
    if (::wait4(info.si_pid, &status, WNOHANG, &use) <= 0) {
      return;  // someone else reaped it meanwhile (not expected: this loop is the only waiter)
    }
    if (worker != nullptr) {
      on_exit(*worker, status, usage_of(use));
    }
  }
}

}  // namespace ditask::launcher
