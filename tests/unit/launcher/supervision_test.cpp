// SPDX-License-Identifier: MIT
// The supervisor's rules with a fake spawner and a fake clock: no process, no waiting.
#include "supervision.hpp"

#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "wait_status.hpp"

using namespace std::chrono_literals;
using ditask::launcher::AttemptEnd;
using ditask::launcher::ProcessSpawner;
using ditask::launcher::SpawnResult;
using ditask::launcher::StopCause;
using ditask::launcher::Supervision;
using ditask::launcher::SupervisionPolicy;
using ditask::launcher::Timers;

namespace {

using ditask::test::exited;
using ditask::test::killed;

/// Time that passes only when the test says so.
class FakeClock final : public Timers {
 public:
  Id after(std::chrono::milliseconds delay, std::function<void()> fire) override {
    const Id id = ++next_;
    due_.emplace(std::make_pair(now_ + delay, id), std::move(fire));
    return id;
  }
  void cancel(Id id) override {
    std::erase_if(due_, [&](const auto& entry) { return entry.first.second == id; });
  }
  /// Moves the clock on by `step`, firing what falls due, in order.
  void advance(std::chrono::milliseconds step) {
    const auto until = now_ + step;
    while (!due_.empty() && due_.begin()->first.first <= until) {
      auto it = due_.begin();
      now_ = it->first.first;
      auto fire = std::move(it->second);
      due_.erase(it);
      fire();
    }
    now_ = until;
  }
  std::chrono::milliseconds now() const { return now_; }
  std::size_t pending() const { return due_.size(); }

 private:
  std::chrono::milliseconds now_{0};
  Id next_ = 0;
  std::map<std::pair<std::chrono::milliseconds, Id>, std::function<void()>> due_;
};

/// Records what the rules asked of processes.
class FakeSpawner final : public ProcessSpawner {
 public:
  explicit FakeSpawner(const FakeClock& clock) : clock_(clock) {}
  struct Start {
    std::size_t worker;
    int attempt;
    std::chrono::milliseconds at;
  };
  SpawnResult spawn(std::size_t worker, int attempt) override {
    starts.push_back({worker, attempt, clock_.now()});
    if (fail_to_start.count(worker) != 0) {
      return SpawnResult{-1, AttemptEnd{exited(127), {"ditask: error: cannot start worker: no such file"}, "", std::nullopt}};
    }
    return SpawnResult{static_cast<pid_t>(1000 + starts.size()), std::nullopt};
  }
  void signal(std::size_t worker, int sig) override { signals.emplace_back(worker, sig); }
  void retire(std::size_t worker) override { retired.push_back(worker); }

  /// Signals sent to `worker`, in order.
  std::vector<int> signals_to(std::size_t worker) const {
    std::vector<int> out;
    for (const auto& [w, sig] : signals) {
      if (w == worker) {
        out.push_back(sig);
      }
    }
    return out;
  }

  std::vector<Start> starts;
  std::vector<std::pair<std::size_t, int>> signals;
  std::vector<std::size_t> retired;  // in order
  std::set<std::size_t> fail_to_start;

 private:
  const FakeClock& clock_;
};

/// --auto-recover with `retries` restarts at most, the first after `backoff`.
SupervisionPolicy recovering(int retries, std::chrono::milliseconds backoff) {
  SupervisionPolicy policy;
  policy.auto_recover = true;
  policy.max_retries = retries;
  policy.restart_backoff = backoff;
  return policy;
}

/// A job of `n` workers with node ids 0..n-1 under `policy`, on the fakes.
struct Job {
  explicit Job(std::size_t n, SupervisionPolicy policy = {})
      : spawner(clock), rules(policy, ids(n), spawner, clock) {
    rules.on_finished([this](bool given_up) {
      finished = true;
      gave_up = given_up;
    });
  }
  static std::vector<std::int64_t> ids(std::size_t n) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(static_cast<std::int64_t>(i));
    }
    return out;
  }
  /// Worker `i`'s process ends with `status` and its output is drained.
  void end(std::size_t i, int status, std::vector<std::string> last_stderr = {}) {
    rules.exited(i, status);
    rules.attempt_over(i, AttemptEnd{status, std::move(last_stderr), "", ditask::launcher::ResourceUse{0.5, 0.25, 4096}});
  }
  FakeClock clock;
  FakeSpawner spawner;
  Supervision rules;
  bool finished = false;
  bool gave_up = false;
};

/// Each worker's last attempt, as the report has it.
std::vector<int> last_attempts(const ditask::launcher::Report& report) {
  std::vector<int> attempts;
  for (const auto& w : report.workers) {
    attempts.push_back(w.attempt);
  }
  return attempts;
}

}  // namespace

TEST_CASE("supervision: every worker exits 0: exit code 0, nobody signalled", "[supervision]") {
  Job job(3);
  job.rules.start();
  REQUIRE(job.spawner.starts.size() == 3);
  job.end(1, exited(0));
  job.end(0, exited(0));
  CHECK_FALSE(job.finished);
  job.end(2, exited(0));
  CHECK(job.finished);
  CHECK_FALSE(job.gave_up);
  CHECK(job.rules.exit_code() == 0);
  CHECK(job.spawner.signals.empty());
  CHECK(last_attempts(job.rules.report()) == std::vector<int>{0, 0, 0});
  CHECK(job.clock.pending() == 0);
}

TEST_CASE("supervision: --startup-interval staggers the starts", "[supervision]") {
  SupervisionPolicy policy;
  policy.startup_interval = 250ms;
  Job job(3, policy);
  job.rules.start();
  REQUIRE(job.spawner.starts.size() == 1);
  job.clock.advance(249ms);
  CHECK(job.spawner.starts.size() == 1);
  job.clock.advance(1ms);
  CHECK(job.spawner.starts.size() == 2);
  job.clock.advance(250ms);
  REQUIRE(job.spawner.starts.size() == 3);
  CHECK(job.spawner.starts[2].at == 500ms);
}

TEST_CASE("supervision: one failure stops the others (fail-fast) and decides the exit code", "[supervision]") {
  SupervisionPolicy policy;
  policy.grace_period = 10s;
  Job job(3, policy);
  job.rules.start();
  job.end(1, exited(3), {"boom"});
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGTERM});
  CHECK(job.spawner.signals_to(2) == std::vector<int>{SIGTERM});
  CHECK(job.spawner.signals_to(1).empty());
  // Node 0 stops gracefully; node 2 dies of the SIGTERM: both were stopped, neither failed.
  job.end(0, exited(0));
  job.end(2, killed(SIGTERM));
  CHECK(job.finished);
  const auto& report = job.rules.report();
  CHECK(report.cause == StopCause::failure);
  REQUIRE(report.failure);
  CHECK(report.failure->node_id == 1);
  CHECK(report.failure->last_stderr == std::vector<std::string>{"boom"});
  REQUIRE(report.stopped.size() == 2);
  CHECK(report.stopped[0].clean);
  CHECK_FALSE(report.stopped[1].clean);
  CHECK(report.also_failed.empty());
  CHECK(job.rules.exit_code() == 3);
  job.clock.advance(60s);  // the grace timer was cancelled: no SIGKILL afterwards
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGTERM});
}

TEST_CASE("supervision: a killed worker's signal is the exit code (128 + signal)", "[supervision]") {
  Job job(2);
  job.rules.start();
  job.end(0, killed(SIGSEGV));
  job.end(1, killed(SIGTERM));
  CHECK(job.rules.exit_code() == 128 + SIGSEGV);
}

TEST_CASE("supervision: the grace period ends in SIGKILL, and the final wait in giving up", "[supervision]") {
  SupervisionPolicy policy;
  policy.grace_period = 2s;
  policy.final_wait = 5s;
  Job job(2, policy);
  job.rules.start();
  job.end(0, exited(1));
  job.clock.advance(1999ms);
  CHECK(job.spawner.signals_to(1) == std::vector<int>{SIGTERM});
  job.clock.advance(1ms);
  CHECK(job.spawner.signals_to(1) == std::vector<int>{SIGTERM, SIGKILL});
  CHECK_FALSE(job.finished);
  job.clock.advance(5s);  // still alive (a D-state process): give up on it
  CHECK(job.finished);
  CHECK(job.gave_up);
  REQUIRE(job.rules.report().stopped.size() == 1);
  CHECK(job.rules.report().stopped[0].node_id == 1);
  CHECK(job.rules.exit_code() == 1);
}

TEST_CASE("supervision: a worker failing on its own during a stop is reported as also failed", "[supervision]") {
  Job job(3);
  job.rules.start();
  job.end(0, exited(2));
  job.end(1, exited(7));  // did not die of the stop signal
  job.end(2, killed(SIGTERM));
  const auto& report = job.rules.report();
  REQUIRE(report.also_failed.size() == 1);
  CHECK(report.also_failed[0].find("node 1") != std::string::npos);
  CHECK(job.rules.exit_code() == 2);  // the first failure decides
}

TEST_CASE("supervision: --auto-recover restarts with doubling backoff, capped, until --max-retries",
          "[supervision]") {
  SupervisionPolicy policy = recovering(3, 1000ms);
  policy.backoff_cap = 3000ms;
  Job job(2, policy);
  job.rules.start();
  const std::vector<std::chrono::milliseconds> waits = {1000ms, 2000ms, 3000ms};  // the third is capped
  for (int attempt = 0; attempt < 3; ++attempt) {
    job.end(1, exited(1));
    CHECK(job.spawner.signals.empty());  // a restart is not a stop
    const std::size_t before = job.spawner.starts.size();
    job.clock.advance(waits[static_cast<std::size_t>(attempt)] - 1ms);
    CHECK(job.spawner.starts.size() == before);
    job.clock.advance(1ms);
    REQUIRE(job.spawner.starts.size() == before + 1);
    CHECK(job.spawner.starts.back().worker == 1);
    CHECK(job.spawner.starts.back().attempt == attempt + 1);
  }
  // The fourth failure is past --max-retries: fail-fast.
  job.end(1, exited(4));
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGTERM});
  job.end(0, killed(SIGTERM));
  CHECK(job.finished);
  CHECK(job.rules.exit_code() == 4);
  CHECK(job.rules.report().failure->attempt == 3);
  CHECK(last_attempts(job.rules.report()) == std::vector<int>{0, 3});
  // The report keeps every ended attempt (for --summary-json): pid, status and resource use.
  const auto& workers = job.rules.report().workers;
  REQUIRE(workers.size() == 2);
  CHECK(workers[0].stopped_by_launcher);
  CHECK_FALSE(workers[1].stopped_by_launcher);
  REQUIRE(workers[1].ended.size() == 4);
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto& a = workers[1].ended[static_cast<std::size_t>(attempt)];
    CHECK(a.attempt == attempt);
    CHECK(a.status == exited(attempt == 3 ? 4 : 1));
    REQUIRE(a.usage);
    CHECK(a.usage->user_seconds == 0.5);
    CHECK(a.usage->peak_rss_bytes == 4096);
  }
  CHECK(workers[1].ended[0].pid != workers[1].ended[1].pid);
  REQUIRE(workers[0].ended.size() == 1);
  CHECK(workers[0].ended[0].status == killed(SIGTERM));
}

TEST_CASE("supervision: a worker that exits 0 is retired at once, a failed one that restarts is not",
          "[supervision]") {
  Job job(3, recovering(2, 10ms));
  job.rules.start();
  job.end(2, exited(0));
  CHECK(job.spawner.retired == std::vector<std::size_t>{2});  // its listening socket goes now
  job.end(1, exited(3));
  job.clock.advance(10ms);
  REQUIRE(job.spawner.starts.back().worker == 1);
  CHECK(job.spawner.retired == std::vector<std::size_t>{2});  // kept: it starts again
  job.end(1, exited(0));
  job.end(0, exited(0));
  CHECK(job.spawner.retired == std::vector<std::size_t>{2, 1, 0});
  CHECK(job.finished);
  CHECK(job.rules.exit_code() == 0);
}

TEST_CASE("supervision: a restart still pending when the job stops never happens", "[supervision]") {
  SupervisionPolicy policy;
  policy.auto_recover = true;
  policy.restart_backoff = 5s;
  Job job(2, policy);
  job.rules.start();
  job.end(1, exited(1));  // restart in 5 s
  job.rules.on_stop_signal(SIGTERM);
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGTERM});
  job.end(0, killed(SIGTERM));
  CHECK(job.finished);
  job.clock.advance(10s);
  CHECK(job.spawner.starts.size() == 2);  // no third start
  CHECK(job.rules.exit_code() == 128 + SIGTERM);
}

TEST_CASE("supervision: --timeout stops the job with exit code 124", "[supervision]") {
  SupervisionPolicy policy;
  policy.timeout = 30s;
  Job job(2, policy);
  job.rules.start();
  job.clock.advance(30s);
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGTERM});
  CHECK(job.spawner.signals_to(1) == std::vector<int>{SIGTERM});
  job.end(0, exited(0));
  job.end(1, exited(0));
  CHECK(job.rules.report().cause == StopCause::timeout);
  CHECK(job.rules.exit_code() == 124);
}

TEST_CASE("supervision: a job that ends before its timeout has no timeout", "[supervision]") {
  SupervisionPolicy policy;
  policy.timeout = 30s;
  Job job(1, policy);
  job.rules.start();
  job.end(0, exited(0));
  CHECK(job.clock.pending() == 0);
  CHECK(job.rules.exit_code() == 0);
}

TEST_CASE("supervision: SIGINT stops every worker, a second SIGINT kills them", "[supervision]") {
  Job job(2);
  job.rules.start();
  job.rules.on_stop_signal(SIGINT);
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGINT});
  job.rules.on_stop_signal(SIGINT);
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGINT, SIGKILL});
  CHECK(job.spawner.signals_to(1) == std::vector<int>{SIGINT, SIGKILL});
  job.end(0, killed(SIGKILL));
  job.end(1, killed(SIGKILL));
  CHECK(job.rules.report().failure == std::nullopt);
  CHECK(job.rules.exit_code() == 128 + SIGINT);
}

TEST_CASE("supervision: SIGTERM during a stop is passed on again", "[supervision]") {
  Job job(1);
  job.rules.start();
  job.rules.on_stop_signal(SIGTERM);
  job.rules.on_stop_signal(SIGTERM);
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGTERM, SIGTERM});
}

TEST_CASE("supervision: USR1 and USR2 reach the running workers, SIGHUP nobody", "[supervision]") {
  Job job(3);
  job.rules.start();
  job.end(2, exited(0));
  job.rules.on_forwarded_signal(SIGUSR1);
  job.rules.on_forwarded_signal(SIGHUP);
  job.rules.on_forwarded_signal(SIGUSR2);
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGUSR1, SIGUSR2});
  CHECK(job.spawner.signals_to(1) == std::vector<int>{SIGUSR1, SIGUSR2});
  CHECK(job.spawner.signals_to(2).empty());
  CHECK_FALSE(job.finished);
}

TEST_CASE("supervision: a worker that cannot start fails the job with 127", "[supervision]") {
  Job job(3);
  job.spawner.fail_to_start.insert(1);
  job.rules.start();
  CHECK_FALSE(job.rules.alive(1));
  CHECK(job.spawner.signals_to(0) == std::vector<int>{SIGTERM});
  CHECK(job.spawner.starts.size() == 2);  // the job stopped before node 2 was started
  job.end(0, killed(SIGTERM));
  CHECK(job.finished);
  CHECK(job.rules.exit_code() == 127);
  CHECK(job.rules.report().failure->last_stderr.size() == 1);
}

TEST_CASE("supervision: an exited worker is not signalled while its output drains", "[supervision]") {
  Job job(2);
  job.rules.start();
  job.rules.exited(0, exited(0));  // gone, output not drained yet
  job.end(1, exited(5));
  CHECK(job.spawner.signals_to(0).empty());
  job.rules.attempt_over(0, AttemptEnd{exited(0), {}, "", std::nullopt});
  CHECK(job.finished);
  CHECK(job.rules.exit_code() == 5);
}

TEST_CASE("supervision: a restart the stop cancelled is not counted in the report", "[supervision]") {
  Job job(2, recovering(3, 1000ms));
  job.rules.start();
  job.end(1, exited(1));  // its restart waits 1 s
  job.rules.on_stop_signal(SIGTERM);
  job.end(0, killed(SIGTERM));
  REQUIRE(job.finished);
  const auto& workers = job.rules.report().workers;
  REQUIRE(workers.size() == 2);
  CHECK(workers[1].attempt == 0);  // attempt 1 never ran
  REQUIRE(workers[1].ended.size() == 1);
  CHECK(workers[1].ended[0].status == exited(1));
}
