// SPDX-License-Identifier: MIT
// Remote calls between real workers (plugins/rpc_tests): results and errors, 10,000 calls in
// flight, nested calls, timeouts, a callee and a holder dying, remote objects' lifetime.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace ditask::test;
using namespace ditask::test::mesh;
using namespace std::chrono_literals;
using Catch::Matchers::StartsWith;

namespace {

std::vector<std::string> rpc_args(const std::string& entry, int workers, std::vector<std::string> more = {}) {
  return module_args("rpc_tests", entry, workers, std::move(more));
}

// The value of "[node 1] CHECK <name> <value>".
std::string check_of(const std::string& out, const std::string& name) {
  for (const auto& line : tagged(out, 1, "CHECK")) {
    if (line.rfind(name + " ", 0) == 0) {
      return line.substr(name.size() + 1);
    }
  }
  return "<no CHECK " + name + ">";
}

}  // namespace

TEST_CASE("rpc: results, errors and futures travel between processes, over tcp, ipc and redis",
          "[rpc][integration][redis]") {
  const std::string protocol = GENERATE(as<std::string>{}, "tcp", "ipc", "redis");
  CAPTURE(protocol);
  const Over over(protocol == "redis" ? "redis" : "mesh");
  auto r = run_ditask(over.args(rpc_args("rpc_basic", 2, protocol == "redis" ? std::vector<std::string>{}
                                                                             : std::vector<std::string>{"--protocol", protocol})),
                      60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  REQUIRE(result_of(r.out, 1) == "done");
  CHECK(check_of(r.out, "add") == "5");
  CHECK(check_of(r.out, "concat") == "5:97,3");  // "ab" + bytes 1,2,3 as raw bytes
  CHECK(check_of(r.out, "summary") == "3:8");    // a JSON result (a map)
  CHECK(check_of(r.out, "who") == "1");          // the callee learned its caller
  CHECK(check_of(r.out, "touch") == "ok");
  CHECK(check_of(r.out, "scaled") == "42");      // named arguments
  CHECK(check_of(r.out, "self") == "42");        // a call to this node itself
  CHECK(check_of(r.out, "by_label") == "2");
  CHECK(check_of(r.out, "boom") == "remote_exception|0|boom|it broke|");
  // A ditask::Error keeps its hint across the call.
  CHECK(check_of(r.out, "refuse") == "remote_exception|0|refuse|not now|try after the warm-up");
  CHECK(check_of(r.out, "before_start") ==
        "stopped|0|add|no task is running in this worker|call ditask::task().start() first");
  CHECK(check_of(r.out, "unknown") == "unknown_function|0|ad|no function 'ad' on node 0|did you mean 'add'?");
  CHECK_THAT(check_of(r.out, "bad_arguments"), StartsWith("bad_arguments|0|add|the arguments do not fit: argument 0: "));
  CHECK_THAT(check_of(r.out, "arity"), StartsWith("bad_arguments|0|add|the arguments do not fit: "));
  CHECK_THAT(check_of(r.out, "bad_result"), StartsWith("bad_result|0|text|the result does not convert"));
  CHECK_THAT(check_of(r.out, "no_result"), StartsWith("bad_result|0|touch|the result does not convert to the type "
                                                      "asked for: the function returned nothing"));
  CHECK(check_of(r.out, "no_label") ==
        "not_connected|-1|add|no connected node has role 'nobody'|give the callee that role with ditask --roles");
  CHECK(check_of(r.out, "then") == "42");
  CHECK(check_of(r.out, "then_error") == "remote_exception|0|boom|again|");
  CHECK(check_of(r.out, "gather") == "4");  // four concurrent calls were inside at once
  CHECK(check_of(r.out, "polled") == "done");
  // A timeout that already passed fails the call at once, and it is not sent.
  CHECK(check_of(r.out, "within_zero") ==
        "timeout|0|add|its timeout (0 ms) had passed before it was sent: not sent|give Callee(node).within(ms) a "
        "positive time");
  CHECK(check_of(r.out, "stats") == "calls=23 answered=15 failed=8 served=1");
}

TEST_CASE("rpc: 10,000 calls in flight from 3 callers are answered exactly once, FIFO per caller",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_many", 4, {"--", "count=3334"})), 120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "served=10002 out_of_order=0");
  for (long node = 1; node <= 3; ++node) {
    CAPTURE(node);
    CHECK(result_of(r.out, node) == "answered=3334 wrong=0");
  }
}

TEST_CASE("rpc: a served call calls back into its caller, which calls a third level, without deadlock",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_nested", 2)), 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "sync=10100 async=2550");
}

TEST_CASE("rpc: a timed-out call fails with timeout and its late answer is dropped and counted, while a longer one waits",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_timeout", 2)), 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) ==
        "timeout=timeout|1|hold|no answer in time: the call was cancelled (a late answer is dropped)|raise the "
        "timeout with Callee(node).within(ms) or rpc().set_default_timeout(ms) late=1 timed_out=1 after=5 long=7");
}

TEST_CASE("rpc: a callee that dies mid-call fails the call with node_left, its restart serves new calls",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_callee_dies", 2, {"--auto-recover", "--restart-backoff", "0"})), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "died=node_left|1|die|node 1 left (connection lost) before it answered| attempt=1");
}

TEST_CASE("rpc: a call that reaches a stopping callee is answered stopped, not left to its timeout",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_callee_stopping", 2)), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "after_finish=stopped|1|add|node 1 is stopping|");
}

TEST_CASE("rpc: calls queued behind a running one are answered stopped as soon as the callee stops",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_queued_at_stop", 2)), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  // The running call may finish; the two behind it do not wait for it.
  CHECK(result_of(r.out, 0) ==
        "queued=stopped|1|add|node 1 is stopping|,stopped|1|add|node 1 is stopping| hold_done_first=no hold=1");
}

TEST_CASE("rpc: a callee sends the replies it holds for a batch before its next function waits for the caller",
          "[rpc][integration]") {
  // Node 0 says "go" only once f1's answer came; f2, run right after f1 in one batch, waits for
  // that "go" while node 1 holds f1's reply. Without the release before the wait, both wait:
  // node 0 prints a FAILED line after 30 s and exits non-zero.
  auto r = run_ditask(rpc_args("rpc_held_replies", 2), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(tagged(r.out, 0, "HELD_REPLIES") == std::vector<std::string>{"ok f1=7 f2=1"});
}

TEST_CASE("rpc: remote objects are created, called through passed handles, and destroyed when released",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_objects", 3)), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) ==
        "owner=1 add=15 here=15 bump=115 get=115 async=116 destroyed=1 self_bump=101 local=101 kept_by=1 "
        "use_kept=1 alive=1 after_drop=2 returned_owner=2 returned_get=42 self_remote=8:1 "
        "unknown_method=did you mean 'add'?");
  CHECK(result_of(r.out, 1) == "destroyed=3 objects=0");
}

TEST_CASE("rpc: a holder that dies releases its handles, and the owner destroys the object",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_holder_dies", 3, {"--auto-recover", "--restart-backoff", "0"})), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) ==
        "alive_before=1 died=call 'die' on node 2 failed: node 2 left (connection lost) before it answered");
  CHECK(result_of(r.out, 1) == "destroyed=1 objects=0");
}

TEST_CASE("rpc: a function defined with define_inline runs as its call arrives, in its caller's order, and may not wait",
          "[rpc][integration][redis]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(rpc_args("rpc_inline", 2)), 90s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) ==
        "sum=79800 in_order=1 threads_differ=1 echo=hi waits=remote_exception|1|inline_waits|function "
        "'inline_waits' (defined with define_inline) cannot wait for the result of call 'noop': it runs on the "
        "thread that receives this node's events and calls|define it with define() or define_concurrent() "
        "instead, which may wait emitted=5");
}

TEST_CASE("rpc: a handle in a call or result that failed to encode stays unregistered, and events refuse handles",
          "[rpc][integration]") {
  // Each object is destroyed once its last handle went; node 1's counts are waited for (60 s
  // at most), so a handle left registered shows as a count that never came.
  auto r = run_ditask(rpc_args("rpc_handle_misuse", 2), 300s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) ==
        "owned=bad_arguments owned_destroyed=1 passed=bad_arguments passed_destroyed=1 "
        "result=remote_exception result_destroyed=2 event=an RRef can travel only as an argument or the "
        "result of a remote call event_destroyed=3");
}

TEST_CASE("rpc: the agent/observer REINFORCE example reaches a low threshold over remote calls",
          "[rpc][integration][rl]") {
  auto r = run_ditask({"--package", module_path("rpc_cartpole"), "--main", "main", "--parallel-workers", "3", "--",
                       "threshold=50"},
                      120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(lines_with(r.out, "[node 0] agent on node 0, 2 observer(s)").size() == 1);
  CHECK(lines_with(r.out, "[node 0] Solved! Running reward is now ").size() == 1);
  const auto summary = tagged(r.out, 0, "SUMMARY");
  REQUIRE(summary.size() == 1);
  CHECK(field(summary[0], "observers") == "2");
  // Two calls per step of each observer (select_action, report_reward), all served by the agent.
  CHECK(std::stol(field(summary[0], "rpcs")) >= 2 * 2 * std::stol(field(summary[0], "episodes")));
}
