// SPDX-License-Identifier: MIT
// The mesh, what a worker refuses and survives: a wrong or missing token, a duplicate node id,
// an event above a peer's frame limit, hostile raw connections, and peers that never come.
#include <csignal>
#include <string>

#include <catch2/catch.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using namespace ditask::test::mesh;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

/// Launcher A: one `serve` worker (node 0) with `more` options; returns its listen address.
std::string start_server(DitaskProcess& a, std::vector<std::string> more = {}) {
  a.start(mesh_args("serve", 1, std::move(more)));
  a.require_line("[node 0] LISTEN ", 30s);
  const auto address = tagged(a.out(), 0, "LISTEN").at(0);
  REQUIRE(tcp_port(address) > 0);
  return address;
}

/// Arguments of launcher B: one `join` worker attaching to `address` as node `node_id`.
std::vector<std::string> join_args(const std::string& address, const std::string& node_id,
                                   std::vector<std::string> more = {},
                                   const std::string& startup_timeout = "5") {
  std::vector<std::string> args = {"--topology", "alone", "--attach-to",       address,
                                   "--node-ids", node_id, "--startup-timeout", startup_timeout};
  args.insert(args.end(), more.begin(), more.end());
  return mesh_args("join", 1, args);
}

/// Launcher B, expected to be refused: runs to its end (a refused dial is retried until the
/// startup timeout, hence a short one).
RunResult join_refused(const std::string& address, const std::string& node_id,
                       std::vector<std::string> more = {}) {
  return run_ditask(join_args(address, node_id, std::move(more), "2"), 30s);
}

/// Launcher B, expected to join: started and waited for until its worker reported the join.
/// It stays in its orderly stop (waiting for A's finish) until A stops; wait() it after that.
void join_ok(DitaskProcess& b, const std::string& address, const std::string& node_id,
             std::vector<std::string> more = {}, const Env& env = {}) {
  b.start(join_args(address, node_id, std::move(more)), env);
  b.require_line("[node " + node_id + "] RESULT ", 30s);
}

/// Ends launcher A (its worker returns on SIGUSR1) and checks it exited 0.
RunResult stop_server(DitaskProcess& a) {
  a.send_signal(SIGUSR1);
  auto ra = a.wait(30s);
  INFO("launcher A:\n" << describe(ra));
  CHECK(ra.exit_code == 0);
  CHECK_THAT(result_of(ra.out, 0), StartsWith("peers="));
  return ra;
}

/// Waits until A's output (stdout or stderr) has a line containing `needle`, any case.
bool server_says(DitaskProcess& a, const std::string& needle) {
  return a.wait_until([&] { return contains_nocase(a.err() + a.out(), needle); }, 20s);
}

}  // namespace

TEST_CASE("mesh: a peer without the job's token is refused", "[mesh][integration][security]") {
  const std::string token(32, 'a');
  DitaskProcess a;
  const auto address = start_server(a, {"--token", token});
  RunResult b;
  SECTION("a different token") {
    b = join_refused(address, "1", {"--token", std::string(32, 'b')});
  }
  SECTION("no token at all") { b = join_refused(address, "1"); }
  const bool logged = server_says(a, "refus");
  INFO("launcher B:\n" << describe(b) << "\nlauncher A so far:\n" << a.describe_so_far());
  CHECK(b.exit_code == 1);
  CHECK((contains_nocase(b.err, "token") || contains_nocase(b.err, "refused")));
  CHECK(logged);
  CHECK(tagged(a.out(), 0, "PEER").empty());
  stop_server(a);
}

TEST_CASE("mesh: a peer with the job's token is admitted, from --token or DITASK_TOKEN",
          "[mesh][integration][security]") {
  const std::string token(32, 'a');
  DitaskProcess a;
  const auto address = start_server(a, {"--token", token});
  DitaskProcess by_option;
  DitaskProcess by_env;
  join_ok(by_option, address, "1", {"--token", token});
  join_ok(by_env, address, "2", {}, {{"DITASK_TOKEN", token}});
  CHECK(a.wait_for_line("[node 0] PEER joined:2@0", 20s));
  CHECK(a.count_lines("[node 0] PEER joined:1@0") == 1);
  stop_server(a);
  auto r1 = by_option.wait(30s);
  auto r2 = by_env.wait(30s);
  INFO("B (--token):\n" << describe(r1) << "\nB (DITASK_TOKEN):\n" << describe(r2));
  CHECK(r1.exit_code == 0);
  CHECK(result_of(r1.out, 1) == "joined peers=0@0");
  CHECK(r2.exit_code == 0);
  CHECK(result_of(r2.out, 2) == "joined peers=0@0");
}

TEST_CASE("mesh: a second node with an id already in the mesh is refused",
          "[mesh][integration][security]") {
  DitaskProcess a;
  const auto address = start_server(a);
  auto b = join_refused(address, "0");
  // A names the refused peer by its node id.
  const bool logged = server_says(a, "refused node 0 (");
  INFO("launcher B:\n" << describe(b) << "\nlauncher A so far:\n" << a.describe_so_far());
  CHECK(b.exit_code == 1);
  CHECK(contains_nocase(b.err, "refused"));
  CHECK(logged);
  CHECK(tagged(a.out(), 0, "PEER").empty());
  stop_server(a);
}

TEST_CASE("mesh: an event above the receiver's frame limit fails in the sender's emit",
          "[mesh][integration][security]") {
  auto r =
      run_ditask(mesh_args("oversize", 2, {"--max-frame-bytes", "64K", "--", "size=102400"}), 30s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const auto errors = tagged(r.out, 1, "OVERSIZE_ERROR");
  REQUIRE(errors.size() == 1);
  CHECK((contains_nocase(errors[0], "65536") || contains_nocase(errors[0], "64 KiB") ||
         contains_nocase(errors[0], "64K")));
  // A ditask::Error, and the connection stayed up: the next small event got through.
  CHECK(result_of(r.out, 1) == "outcome=ditask_error peers=0@0");
  CHECK(result_of(r.out, 0) == "big=0 small=1");
}

TEST_CASE("mesh: hostile connections are closed and logged, and the worker keeps serving",
          "[mesh][integration][security]") {
  DitaskProcess a;
  const auto address = start_server(a);
  const int port = tcp_port(address);
  // Silent first: it is closed only when its hello timeout ends, while the others go on.
  RawClient silent(port);
  struct Attack {
    const char* name;
    std::string bytes;
    bool close_after = false;
  };
  const std::vector<Attack> attacks = {
      {"garbage", "GET / HTTP/1.1\r\nHost: ditask\r\n\r\n" + std::string(64, '\xff')},
      {"oversize length", frame_header(WireType::hello, 0xFFFFFFF0U)},
      {"unknown frame type", frame_header(WireType::unknown, 0)},
      {"garbage hello payload", frame_header(WireType::hello, 8) + std::string(8, '\xc1')},
      {"event before hello", frame_header(WireType::event, 0)},
      {"truncated frame", frame_header(WireType::hello, 100) + std::string(10, '\0'), true},
  };
  for (const auto& attack : attacks) {
    CAPTURE(attack.name);
    RawClient client(port);
    client.send(attack.bytes);
    if (attack.close_after) {
      client.shutdown_write();
    }
    CHECK(client.wait_closed(30s));
    const bool logged = a.wait_for_line(client.local_address(), 30s);
    INFO(a.describe_so_far());
    CHECK(logged);
    REQUIRE(a.running());
  }
  {
    INFO("silence");
    CHECK(silent.wait_closed(30s));
    const bool logged = a.wait_for_line(silent.local_address(), 30s);
    INFO(a.describe_so_far());
    CHECK(logged);
    REQUIRE(a.running());
  }
  // Still a working mesh node: a real peer joins.
  DitaskProcess b;
  join_ok(b, address, "1");
  stop_server(a);
  auto rb = b.wait(30s);
  INFO("launcher B:\n" << describe(rb));
  CHECK(rb.exit_code == 0);
  CHECK(result_of(rb.out, 1) == "joined peers=0@0");
}

TEST_CASE("mesh: a peer that never answers fails start() after --startup-timeout, named",
          "[mesh][integration][security]") {
  RefusingPort closed;
  const std::string address = "tcp://127.0.0.1:" + std::to_string(closed.port);
  auto r = run_ditask(
      mesh_args("join", 1,
                {"--topology", "alone", "--attach-to", address, "--startup-timeout", "2"}),
      30s);
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Contains("mesh not ready after 2"));
  CHECK_THAT(r.err, Contains(address));
  CHECK_THAT(r.err, Contains("ditask: job failed: node 0 (pid "));
}
