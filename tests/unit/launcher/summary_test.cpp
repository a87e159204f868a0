// SPDX-License-Identifier: MIT
// The job's exit code and the failure summary printed on stderr.
#include "summary.hpp"

#include <cstdio>
#include <signal.h>
#include <string>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "wait_status.hpp"

#include "ditask/launcher/options.hpp"

using Catch::Matchers::Contains;
using ditask::launcher::describe_failure;
using ditask::launcher::exit_code;
using ditask::launcher::Failure;
using ditask::launcher::Report;
using ditask::launcher::StopCause;

namespace {

/// Raw wait statuses as waitpid() reports them (Linux layout).
using ditask::test::exited;
using ditask::test::killed;

Failure failure(std::int64_t node, pid_t pid, int status, int attempt = 0) {
  Failure f;
  f.node_id = node;
  f.pid = pid;
  f.status = status;
  f.attempt = attempt;
  return f;
}

/// What `fn` writes to stderr.
template <class F>
std::string stderr_of(F&& fn) {
  std::FILE* file = std::tmpfile();
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(::fileno(file), STDERR_FILENO);
  fn();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::string out;
  ::lseek(::fileno(file), 0, SEEK_SET);
  char buf[4096];
  for (ssize_t n; (n = ::read(::fileno(file), buf, sizeof buf)) > 0;) {
    out.append(buf, static_cast<std::size_t>(n));
  }
  std::fclose(file);
  return out;
}

}  // namespace

TEST_CASE("launcher exit code rules", "[launcher][summary]") {
  Report r;
  CHECK(exit_code(r) == 0);

  SECTION("a worker that exited with a code") {
    r.failure = failure(1, 100, exited(3));
    CHECK(exit_code(r) == 3);
  }
  SECTION("a worker killed by a signal: 128+N") {
    r.failure = failure(1, 100, killed(SIGKILL));
    CHECK(exit_code(r) == 137);
    r.failure = failure(1, 100, killed(SIGSEGV));
    CHECK(exit_code(r) == 139);
  }
  SECTION("timeout") {
    r.stopping = true;
    r.cause = StopCause::timeout;
    CHECK(exit_code(r) == 124);
  }
  SECTION("the launcher stopped by a signal") {
    r.stopping = true;
    r.cause = StopCause::signal;
    r.signal = SIGINT;
    CHECK(exit_code(r) == 130);
    r.signal = SIGTERM;
    CHECK(exit_code(r) == 143);
  }
  SECTION("a failure decides over the stop cause") {
    r.stopping = true;
    r.cause = StopCause::timeout;
    r.failure = failure(2, 100, exited(5));
    CHECK(exit_code(r) == 5);
  }
  SECTION("stopped after a failure") {
    r.stopping = true;
    r.cause = StopCause::failure;
    r.failure = failure(0, 100, exited(1));
    CHECK(exit_code(r) == 1);
  }
}

TEST_CASE("describe_failure names the node, pid, attempt and cause", "[launcher][summary]") {
  CHECK(describe_failure(failure(1, 4711, killed(SIGSEGV))) ==
        "node 1 (pid 4711, attempt 0) killed by SIGSEGV");
  CHECK(describe_failure(failure(2, 42, exited(3), 1)) ==
        "node 2 (pid 42, attempt 1) exited with code 3");
  CHECK(describe_failure(failure(0, 7, killed(SIGKILL), 2)) ==
        "node 0 (pid 7, attempt 2) killed by SIGKILL");
}

TEST_CASE("print_summary explains the first failure", "[launcher][summary]") {
  const auto options = ditask::launcher::resolve_options({{"package", "x"}, {"timeout", "5"}}, {});
  Report r;
  r.stopping = true;
  r.cause = StopCause::failure;
  r.failure = failure(1, 4711, killed(SIGKILL));
  r.failure->last_stderr = {"allocating", "still allocating"};
  r.failure->log_path = "/tmp/logs/node_1.log";
  r.stopped = {{0, 4710}, {2, 4712}};
  const std::string err = stderr_of([&] { ditask::launcher::print_summary(r, options); });
  CHECK(err ==
        "ditask: job failed: node 1 (pid 4711, attempt 0) killed by SIGKILL\n"
        "ditask: hint: killed by SIGKILL: out of memory? (check dmesg or the cgroup's "
        "memory.events)\n"
        "ditask: last lines of node 1's stderr:\n"
        "ditask:   | allocating\n"
        "ditask:   | still allocating\n"
        "ditask: full output: /tmp/logs/node_1.log\n"
        "ditask: stopped by the launcher: node 0 (pid 4710), node 2 (pid 4712)\n"
        "ditask: exit code 137\n");

  SECTION("a timeout") {
    Report t;
    t.stopping = true;
    t.cause = StopCause::timeout;
    const std::string text = stderr_of([&] { ditask::launcher::print_summary(t, options); });
    CHECK_THAT(
        text, Contains("job timed out after 5 s (--timeout)") && Contains("ditask: exit code 124"));
  }
  SECTION("a signal") {
    Report s;
    s.stopping = true;
    s.cause = StopCause::signal;
    s.signal = SIGINT;
    const std::string text = stderr_of([&] { ditask::launcher::print_summary(s, options); });
    CHECK_THAT(text, Contains("stopped by SIGINT") && Contains("ditask: exit code 130"));
  }
  SECTION("a signal some workers stopped on gracefully (or finished on their own meanwhile)") {
    Report g;
    g.stopping = true;
    g.cause = StopCause::signal;
    g.signal = SIGTERM;
    g.stopped = {{0, 10, true}, {1, 11, false}, {2, 12, true}};
    const std::string text = stderr_of([&] { ditask::launcher::print_summary(g, options); });
    CHECK_THAT(text, Contains("ditask: ended with exit 0 while the job was stopping: node 0 (pid 10), "
                              "node 2 (pid 12)\n"
                              "ditask: stopped by the launcher: node 1 (pid 11)\n"
                              "ditask: exit code 143\n"));
  }
  SECTION("a failure with no stderr") {
    Report q;
    q.failure = failure(3, 9, exited(2));
    const std::string text = stderr_of([&] { ditask::launcher::print_summary(q, options); });
    CHECK_THAT(text, Contains("node 3 wrote nothing to stderr") && Contains("exited with code 2"));
  }
  SECTION("a worker that failed on its own while the job was stopping") {
    Report a = r;
    a.also_failed = {"node 2 (pid 4712, attempt 0) exited with code 1"};
    a.stopped = {{0, 4710}};
    const std::string text = stderr_of([&] { ditask::launcher::print_summary(a, options); });
    CHECK_THAT(text, Contains("ditask: also failed while stopping: node 2 (pid 4712, attempt 0) "
                              "exited with code 1\n"
                              "ditask: stopped by the launcher: node 0 (pid 4710)\n"));
  }
  SECTION("success prints nothing at the default log level") {
    Report ok;
    ok.workers.resize(2);
    CHECK(stderr_of([&] { ditask::launcher::print_summary(ok, options); }).empty());
  }
}
