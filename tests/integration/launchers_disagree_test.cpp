// SPDX-License-Identifier: MIT
// Launchers of one job that disagree about it (another --world-size, another --run-id at a
// rendezvous) or cannot meet: each is told why at once, and a launcher whose rendezvous failed
// exits 4, apart from usage errors (2). Over the mesh, Redis, and a tcp rendezvous.
#include <string>
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

constexpr const char* kSizeHint =
    "ditask: hint: give every launcher of the job the same --world-size: the sum of their --parallel-workers";

}  // namespace

TEST_CASE("launchers with different --world-size fail at start, each naming both sizes (mesh)",
          "[integration][bad-input][mesh]") {
  // Over ipc with a run id of the test's own, launcher A's address is known before it starts.
  TempDir tmp;
  const Env env = {{"TMPDIR", tmp.path()}};
  const std::string hub = "ipc://" + tmp.path() + "/ditask-sizes/node_0.sock";
  DitaskProcess a;
  a.start(mesh_args("finish_chain", 1, {"--protocol", "ipc", "--run-id", "sizes", "--world-size", "3"}), env);
  auto b = run_ditask(mesh_args("finish_chain", 2,
                                {"--protocol", "ipc", "--run-id", "sizes", "--world-size", "4", "--node-ids", "1,2",
                                 "--topology", "alone", "--attach-to", hub}),
                      60s, env);
  auto ra = a.wait(60s);
  INFO("launcher A:\n" << describe(ra) << "\nlauncher B:\n" << describe(b));
  CHECK(ra.exit_code == 1);
  CHECK(b.exit_code == 1);
  CHECK_THAT(ra.err, Contains("mesh cannot become ready: node 0 and "));
  CHECK_THAT(ra.err, Contains(": we refused it: its job has 4 workers (--world-size), ours 3"));
  CHECK_THAT(b.err, Contains("mesh cannot become ready: node "));
  CHECK_THAT(b.err, Contains(": its job has 3 workers (--world-size), ours 4"));
  CHECK_THAT(ra.err, Contains(kSizeHint));
  CHECK_THAT(b.err, Contains(kSizeHint));
}

TEST_CASE("launchers with different --world-size fail at start, each naming both sizes (Redis)",
          "[integration][bad-input][redis]") {
  RedisServer redis;
  const std::vector<std::string> over = {"--mq-type", "redis", "--redis-port", redis.port_text(), "--run-id", "sizes"};
  auto with = [&over](std::vector<std::string> more) {
    more.insert(more.end(), over.begin(), over.end());
    return more;
  };
  DitaskProcess a;
  a.start(mesh_args("finish_chain", 1, with({"--world-size", "3"})));
  auto b = run_ditask(mesh_args("finish_chain", 2, with({"--world-size", "4", "--node-ids", "1,2"})), 60s);
  auto ra = a.wait(60s);
  INFO("launcher A:\n" << describe(ra) << "\nlauncher B:\n" << describe(b));
  CHECK(ra.exit_code == 1);
  CHECK(b.exit_code == 1);
  CHECK_THAT(ra.err, Contains("belongs to a job of 4 workers (--world-size), this node to one of 3"));
  CHECK_THAT(b.err, Contains("node 0 (attempt 0) belongs to a job of 3 workers (--world-size), this node to one of 4"));
  CHECK_THAT(ra.err, Contains(kSizeHint));
  CHECK_THAT(b.err, Contains(kSizeHint));

  // Started again at once with the same run id and the sizes put right, the job runs: nothing
  // of the refused run is taken for a live node, not even the presence key a refused worker
  // killed by its launcher's fail-fast leaves behind for its TTL (set here by hand).
  CHECK(redis.ask(R"(SET ditask:sizes:p:1 "{\"node\":1,\"attempt\":0,\"instance\":99,\"labels\":[\"node.1\"],)"
                  R"(\"world\":4,\"topics\":null,\"iv\":0}" PX 15000)") == "OK");
  DitaskProcess a2;
  a2.start(mesh_args("finish_chain", 1, with({"--world-size", "3"})));
  auto b2 = run_ditask(mesh_args("finish_chain", 2, with({"--world-size", "3", "--node-ids", "1,2"})), 60s);
  auto ra2 = a2.wait(60s);
  INFO("again, launcher A:\n" << describe(ra2) << "\nlauncher B:\n" << describe(b2));
  CHECK(ra2.exit_code == 0);
  CHECK(b2.exit_code == 0);
}

TEST_CASE("rendezvous: a launcher of another run id is refused at once and exits 4, as does one that meets nobody",
          "[integration][bad-input]") {
  const std::string g = module_path("greeting");
  // The rank-0 launcher serves on a port given before it starts: one reserved for this test.
  const ReservedPorts reserved(1);
  const std::string url = "tcp://127.0.0.1:" + std::to_string(reserved.first);
  DitaskProcess a;
  a.start({"--package", g, "--parallel-workers", "1", "--world-size", "2", "--run-id", "right", "--rendezvous", url});
  auto wrong = run_ditask({"--package", g, "--parallel-workers", "1", "--world-size", "2", "--node-ids", "1",
                           "--run-id", "wrong", "--rendezvous", url},
                          60s);
  INFO(describe(wrong));
  CHECK(wrong.exit_code == 4);
  CHECK_THAT(wrong.err, Contains("ditask: error: rendezvous: the launcher serving " + url +
                                 " serves run 'right', this launcher belongs to 'wrong'"));
  CHECK(wrong.out.empty());
  auto right = run_ditask({"--package", g, "--parallel-workers", "1", "--world-size", "2", "--node-ids", "1",
                           "--run-id", "right", "--rendezvous", url},
                          60s);
  auto ra = a.wait(60s);
  INFO(describe(right) << "\n" << describe(ra));
  CHECK(right.exit_code == 0);
  CHECK(ra.exit_code == 0);

  // Nobody serves there: the joiner gives up after --startup-timeout with exit 4.
  const BoundPort closed(false);
  auto alone = run_ditask({"--package", g, "--parallel-workers", "1", "--world-size", "2", "--node-ids", "1",
                           "--run-id", "r", "--startup-timeout", "0.2", "--rendezvous",
                           "tcp://127.0.0.1:" + std::to_string(closed.port)},
                          60s);
  INFO(describe(alone));
  CHECK(alone.exit_code == 4);
  CHECK_THAT(alone.err, Contains("ditask: error: rendezvous: no table from tcp://127.0.0.1:" +
                                 std::to_string(closed.port) + " within 0.2 s: Connection refused"));
}
