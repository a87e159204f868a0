// SPDX-License-Identifier: MIT
// --mq-type redis against real redis-servers of the tests' own: what only Redis has (run
// scoping, a restart of Redis mid-run, logins, an unreachable server, launchers that share a
// run). The event semantics shared with the mesh run over both transports in mesh_test.cpp and
// mesh_delivery_test.cpp.
#include <algorithm>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "mesh_support.hpp"
#include "redis_server.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using namespace ditask::test::mesh;
using Catch::Matchers::Contains;

namespace {

std::vector<std::string> over_redis(const RedisServer& redis, std::vector<std::string> args,
                                    std::vector<std::string> module_args = {}) {
  args.insert(args.end(), {"--mq-type", "redis", "--redis-port", redis.port_text()});
  if (!module_args.empty()) {
    args.push_back("--");
    args.insert(args.end(), module_args.begin(), module_args.end());
  }
  return args;
}

// Starts the stalled_reader entry (48 events of 1 MiB from node 1 to node 0) with `more` ditask
// options, stops node 0 (SIGSTOP) once both are up, then lets node 1 send; node 0's pid.
pid_t start_stalled_reader(DitaskProcess& p, const RedisServer& redis, std::vector<std::string> more) {
  p.start(over_redis(redis, mesh_args("stalled_reader", 2, std::move(more)), {"count=48", "size=1048576"}));
  p.require_line("[node 0] READING pid=", 60s);
  p.require_line("[node 1] WAITING pid=", 60s);
  const auto readers = numbers_after(p.out(), "[node 0] READING pid=");
  const auto senders = numbers_after(p.out(), "[node 1] WAITING pid=");
  REQUIRE(readers.size() == 1);
  REQUIRE(senders.size() == 1);
  const pid_t reader = readers[0];
  REQUIRE(::kill(reader, SIGSTOP) == 0);
  REQUIRE(::kill(senders[0], SIGUSR1) == 0);
  return reader;
}

// What Redis sees: how many clients subscribe to a channel (CLIENT LIST), and how many bytes it
// has read from all its clients (INFO stats).
struct RedisTraffic {
  int subscribers = 0;
  std::size_t bytes_in = 0;
};

RedisTraffic redis_traffic(const RedisServer& redis) {
  RedisTraffic out;
  for (const auto& line : split_lines(redis.ask("CLIENT LIST"))) {
    const auto at = line.find(" sub=");
    out.subscribers += at != std::string::npos && std::stoi(line.substr(at + 5)) > 0 ? 1 : 0;
  }
  for (const auto& line : split_lines(redis.ask("INFO stats"))) {
    if (line.rfind("total_net_input_bytes:", 0) == 0) {
      out.bytes_in = std::stoull(line.substr(22));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("redis: two runs on one Redis at once never see each other's events", "[redis][integration]") {
  RedisServer redis;
  DitaskProcess a, b;
  // The same node ids in both: without run scoping each would see the other's hellos and events.
  a.start(over_redis(redis, mesh_args("order", 4), {"count=20000"}));
  b.start(over_redis(redis, mesh_args("order", 4), {"count=20000"}));
  auto ra = a.wait(100s);
  auto rb = b.wait(100s);
  INFO("run A:\n" << describe(ra) << "\nrun B:\n" << describe(rb));
  REQUIRE(ra.exit_code == 0);
  REQUIRE(rb.exit_code == 0);
  const std::string all = "received=60000 inversions=0 gaps=0 next_1=20000 next_2=20000 next_3=20000 "
                          "frames=60000 unhandled=0";
  CHECK(result_of(ra.out, 0) == all);
  CHECK(result_of(rb.out, 0) == all);
  CHECK_THAT(ra.err + rb.err, !Contains("another process says it is node"));
}

TEST_CASE("redis: launchers that share --run-id form one job, finish reaches every node",
          "[redis][integration]") {
  RedisServer redis;
  DitaskProcess a;
  a.start(over_redis(redis, mesh_args("finish_chain", 1, {"--run-id", "shared-job", "--world-size", "3"})));
  auto b = run_ditask(
      over_redis(redis, mesh_args("finish_chain", 2, {"--run-id", "shared-job", "--world-size", "3", "--node-ids", "1,2"})),
      30s);
  auto ra = a.wait(30s);
  INFO("launcher A:\n" << describe(ra) << "\nlauncher B:\n" << describe(b));
  CHECK(ra.exit_code == 0);
  CHECK(b.exit_code == 0);
  // Over Redis every node of the run is a peer of every other: node 1's finish ends both.
  CHECK(result_of(b.out, 1) == "node=1 ran=2");
  CHECK(result_of(ra.out, 0) == "node=0 finish_from=1 reason=ok arg=true");
  CHECK(result_of(b.out, 2) == "node=2 finish_from=1 reason=ok arg=true");
}

TEST_CASE("redis: Redis restarted mid-run: every event is delivered or counted lost, in order, none silently",
          "[redis][integration]") {
  RedisServer redis;
  DitaskProcess p;
  p.start(over_redis(redis, mesh_args("outage", 2)));
  p.require_line("[node 0] RECEIVING pid=", 60s);
  p.require_line("[node 1] SENDING pid=", 60s);
  redis.restart();  // killed (everything it held is gone) and started again on its port
  // Each worker reports the loss and, once it has logged in and announced itself again, the
  // reconnect; node 1 keeps emitting throughout.
  const bool reconnected = p.wait_for_line("reconnected to Redis at 127.0.0.1:" + redis.port_text(), 60s, 2);
  INFO("stdout so far:\n" << p.out() << "\nstderr so far:\n" << p.err());
  REQUIRE(reconnected);
  const auto senders = numbers_after(p.out(), "[node 1] SENDING pid=");
  REQUIRE(senders.size() == 1);
  REQUIRE(::kill(senders[0], SIGUSR1) == 0);
  auto r = p.wait(120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(lines_with(r.err, "lost the connection to Redis at 127.0.0.1:" + redis.port_text()).size() == 2);
  const auto sent = field(result_of(r.out, 0), "sent");
  CHECK(result_of(r.out, 1) == "sent=" + sent);
  // What node 0 received plus what it reported lost is exactly what node 1 sent, in order.
  CHECK(field(result_of(r.out, 0), "accounted") == "yes");
  CHECK(field(result_of(r.out, 0), "inversions") == "0");
  const auto lost = field(result_of(r.out, 0), "lost");
  if (lost != "0") {
    CHECK_THAT(r.err, Contains("event(s) from node 1 never arrived"));
  }
}

TEST_CASE("redis: a presence key left by a process that is gone is never taken for a live peer",
          "[redis][integration]") {
  // A worker of an earlier run with the same run id, killed before it could delete its key (its
  // launcher's fail-fast, a crash): the key outlives it by up to its 15 s TTL. A peer that took
  // it for node 0 would be ready without the real one, and send node 0's events (its finish) to a
  // process that is gone: the real node 0 would wait for them for ever.
  RedisServer redis;
  CHECK(redis.ask(R"(SET ditask:stale:p:0 "{\"node\":0,\"attempt\":7,\"instance\":12345,\"labels\":[\"node.0\"],)"
                  R"(\"world\":3,\"topics\":null,\"iv\":0}" PX 15000)") == "OK");
  const std::vector<std::string> over = {"--mq-type", "redis", "--redis-port", redis.port_text(), "--run-id", "stale",
                                         "--world-size", "3", "--log-level", "info"};
  auto with = [&over](std::vector<std::string> more) {
    more.insert(more.end(), over.begin(), over.end());
    return more;
  };
  DitaskProcess b;  // nodes 1 and 2 first: the key is all they could find of node 0
  b.start(mesh_args("finish_chain", 2, with({"--node-ids", "1,2"})));
  auto a = run_ditask(mesh_args("finish_chain", 1, with({})), 60s);
  auto rb = b.wait(60s);
  INFO("launcher A:\n" << describe(a) << "\nlauncher B:\n" << describe(rb));
  CHECK(a.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(lines_with(rb.err, "node 0 joined (attempt 7)").empty());
  CHECK(lines_with(rb.err, "node 0 joined (attempt 0)").size() == 2);
  CHECK(result_of(a.out, 0) == "node=0 finish_from=1 reason=ok arg=true");
}

TEST_CASE("redis: a wrong password fails the job at once with Redis's refusal, the right one works",
          "[redis][integration][bad-input]") {
  RedisServer redis("right-password");
  auto wrong = run_ditask(over_redis(redis, mesh_args("ping", 2, {"--redis-password", "wrong"})), 60s);
  INFO(describe(wrong));
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.err, Contains("ditask: error: entry 'ping' failed: Redis at 127.0.0.1:" + redis.port_text() +
                                 " refused the login: WRONGPASS"));
  CHECK_THAT(wrong.err, Contains("ditask: hint: check --redis-password"));
  auto none = run_ditask(over_redis(redis, mesh_args("ping", 2)), 60s);
  INFO(describe(none));
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.err, Contains("refused the login: NOAUTH"));
  auto right = run_ditask(mesh_args("ping", 2, {"--mq-type", "redis", "--redis-url",
                                                "redis://:right-password@127.0.0.1:" + redis.port_text() + "/1"}),
                          60s);
  INFO(describe(right));
  CHECK(right.exit_code == 0);
  CHECK(result_of(right.out, 0) == "peers=1 pings_from=1");
}

TEST_CASE("redis: an unreachable Redis fails start-up within --startup-timeout, naming it",
          "[redis][integration][bad-input]") {
  RefusingPort closed;  // bound, not listening: every connect is refused
  auto r = run_ditask(mesh_args("ping", 2, {"--mq-type", "redis", "--redis-port", std::to_string(closed.port),
                                            "--startup-timeout", "2"}),
                      60s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("ditask: error: entry 'ping' failed: cannot reach Redis at 127.0.0.1:" +
                             std::to_string(closed.port) + " within 2 s: "));
  CHECK_THAT(r.err, Contains("ditask: hint: start redis-server there"));
}

TEST_CASE("redis: a peer is sent only the events it handles, following on() and off(), the mesh sends all",
          "[redis][integration]") {
  const std::string transport = GENERATE(as<std::string>{}, "mesh", "redis");
  CAPTURE(transport);
  const Over over(transport);
  auto r = run_ditask(over.args(mesh_args("interest", 2)), 60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  if (transport == "mesh") {
    // All 123 frames reach node 1; the 50 "unwanted" and the 10 "late" after off() find no handler.
    CHECK(result_of(r.out, 1) == "wanted=50 late=10 received=123 unhandled=60");
    CHECK(result_of(r.out, 0) == "received=3 unhandled=0");
  } else {
    // Those 60 never leave node 0, which counts them unhandled; node 1 gets the other 63.
    CHECK(result_of(r.out, 1) == "wanted=50 late=10 received=63 unhandled=0");
    CHECK(result_of(r.out, 0) == "received=3 unhandled=60");
  }
}

TEST_CASE("redis: a stopped reader holds its sender back to a window, Redis never closes its subscription",
          "[redis][integration]") {
  // Redis closes a subscriber whose output buffer passes 8 MB: a sender without a window to its
  // reader (48 MiB as fast as it can) would pass it at once while the reader is stopped.
  RedisServer redis({}, {"--client-output-buffer-limit", "pubsub 8mb 8mb 0"});
  DitaskProcess p;
  const pid_t reader = start_stalled_reader(p, redis, {});
  // What node 1 sends grows until it waits for the reader, then stays (or, with no window,
  // Redis closes the reader's subscription).
  RedisTraffic seen = redis_traffic(redis);
  for (int polls = 0; polls < 3000; ++polls) {
    std::this_thread::sleep_for(20ms);
    const auto now = redis_traffic(redis);
    const bool waits = now.bytes_in >= (3u << 20) && now.bytes_in - seen.bytes_in < (256u << 10);
    seen = now;
    if (now.subscribers < 2 || waits) {  // one subscribing client per worker
      break;
    }
  }
  REQUIRE(::kill(reader, SIGCONT) == 0);
  auto r = p.wait(120s);
  INFO(describe(r) << "\nsubscribers=" << seen.subscribers << " bytes into Redis=" << seen.bytes_in);
  CHECK(seen.subscribers == 2);
  CHECK(seen.bytes_in <= (5u << 20));  // the 4 MiB window, the frames' framing and the workers' own commands
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "received=48 bytes=50331648 corrupt=0 lost=0");
  CHECK(result_of(r.out, 1) == "sent=48");
  CHECK(lines_with(r.err, "lost the connection").empty());
}

TEST_CASE("redis: an emit that waits past --send-timeout for a stopped reader fails naming the reader",
          "[redis][integration]") {
  RedisServer redis;
  DitaskProcess p;
  const pid_t reader = start_stalled_reader(p, redis, {"--send-timeout", "1"});
  // The window (4 MiB) fills with the first frames; the next emit waits 1 s, then fails.
  const bool failed = p.wait_for_line("stayed full for", 120s);
  REQUIRE(::kill(reader, SIGCONT) == 0);
  auto r = p.wait(120s);
  INFO(describe(r));
  REQUIRE(failed);
  CHECK(r.exit_code == 1);
  // The one text of every transport (the mesh's); what the reader has not read is in the hint.
  CHECK_THAT(r.err, Contains("ditask: error: entry 'stalled_reader' failed: event 'blob': the send queue to node 0 "
                             "stayed full for 1 s"));
  CHECK_THAT(r.err, Contains("hint: node 0 has not read the "));
  CHECK_THAT(r.err, Contains(" bytes sent to it before: is it busy in a handler? raise --send-timeout"));
  CHECK(lines_with(r.out, "[node 1] sent=").empty());  // the failed emit ended node 1's entry
}
