// SPDX-License-Identifier: MIT
// Pre-bound listening sockets: free ports, port clashes reported before any worker starts, ipc.
#include "listen_sockets.hpp"

#include <atomic>
#include <filesystem>
#include <netinet/in.h>
#include <set>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "worker_options.hpp"

#include "fixtures.hpp"

#include "ditask/error.hpp"
#include "ditask/launcher/options.hpp"
#include "ditask/launcher/plan.hpp"

using Catch::Matchers::Contains;
using ditask::launcher::is_loopback;
using ditask::launcher::ListenSockets;
using ditask::launcher::Options;
using ditask::launcher::Plan;

namespace {

using ditask::test::workers;

int port_of(const std::string& listen) { return std::stoi(listen.substr(listen.rfind(':') + 1)); }

bool is_listening(int fd) {
  int on = 0;
  socklen_t len = sizeof on;
  return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on == 1;
}

}  // namespace

TEST_CASE("bind_all gives each worker its own free port", "[launcher][sockets]") {
  const Options o = workers(3);
  Plan plan = ditask::launcher::plan_layout(o, "r");
  ListenSockets sockets = ListenSockets::bind_all(plan);
  std::set<int> ports;
  for (std::size_t i = 0; i < plan.workers.size(); ++i) {
    const auto& listen = plan.workers[i].listen;
    CHECK_THAT(listen, Catch::Matchers::StartsWith("tcp://127.0.0.1:"));
    const int port = port_of(listen);
    CHECK(port > 0);
    ports.insert(port);
    CHECK(sockets.fd(i) >= 0);
    CHECK(is_listening(sockets.fd(i)));
  }
  CHECK(ports.size() == 3);
  // MASTER_PORT is reserved too, and is none of the mesh ports.
  CHECK(plan.master_port > 0);
  CHECK(ports.count(static_cast<int>(plan.master_port)) == 0);
  CHECK_THROWS(sockets.fd(3));

  SECTION("the rewritten plan wires the real ports") {
    ditask::launcher::plan_wiring(plan, o);
    CHECK(plan.workers[2].attach_to ==
          std::vector<std::string>{plan.workers[0].listen, plan.workers[1].listen});
    CHECK(plan.workers[0].env.at("MASTER_PORT") == std::to_string(plan.master_port));
  }
  SECTION("moving keeps the sockets open") {
    const int fd0 = sockets.fd(0);
    ListenSockets moved(std::move(sockets));
    CHECK(moved.fd(0) == fd0);
    CHECK(is_listening(fd0));
  }
}

TEST_CASE("MASTER_PORT is reserved where this launcher listens, not at MASTER_ADDR's name",
          "[launcher][sockets]") {
  // Under --platform, MASTER_ADDR is the job's first host as the platform names it; a rank-0
  // launcher given --address must not bind that name (a simulated cluster's names do not
  // resolve). 192.0.2.1 (TEST-NET-1) is no address of this machine: binding it fails, and no
  // packet is sent.
  Plan plan = ditask::launcher::plan_layout(workers(1), "r");
  plan.master_addr = "192.0.2.1";
  ListenSockets sockets = ListenSockets::bind_all(plan);
  CHECK(plan.master_port > 0);
  CHECK(plan.master_addr == "192.0.2.1");
}

TEST_CASE("bind_all closes its sockets when destroyed", "[launcher][sockets]") {
  Plan plan = ditask::launcher::plan_layout(workers(1), "r");
  int fd = -1;
  {
    ListenSockets sockets = ListenSockets::bind_all(plan);
    fd = sockets.fd(0);
    REQUIRE(is_listening(fd));
  }
  CHECK_FALSE(is_listening(fd));
}

TEST_CASE("a port already in use is reported with a hint", "[launcher][sockets]") {
  ditask::test::PortSquatter squatter;
  Options o = workers(1);
  o.ports = {squatter.port};
  Plan plan = ditask::launcher::plan_layout(o, "r");
  try {
    ListenSockets::bind_all(plan);
    FAIL("expected a ditask::Error");
  } catch (const ditask::Error& e) {
    CHECK(std::string(e.what()) == "cannot listen on tcp://127.0.0.1:" +
                                       std::to_string(squatter.port) + ": Address already in use");
    CHECK_THAT(e.hint(), Contains("another process uses this port") && Contains("--ports"));
  }
}

TEST_CASE("an address that is not this machine's is reported", "[launcher][sockets]") {
  Options o = workers(1);
  o.address = "203.0.113.7";  // TEST-NET-3: never a local address
  Plan plan = ditask::launcher::plan_layout(o, "r");
  try {
    ListenSockets::bind_all(plan);
    FAIL("expected a ditask::Error");
  } catch (const ditask::Error& e) {
    CHECK_THAT(e.what(), Contains("cannot listen on tcp://203.0.113.7:0: "));
    CHECK_THAT(e.hint(), Contains("--address"));
  }
}

TEST_CASE("ipc sockets live in a per-run folder removed at the end", "[launcher][sockets]") {
  static std::atomic<int> counter{0};
  const std::string run_id =
      "sockets-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  Options o = workers(2);
  o.protocol = "ipc";
  Plan plan = ditask::launcher::plan_layout(o, run_id);
  const auto dir = std::filesystem::temp_directory_path() / ("ditask-" + run_id);
  {
    ListenSockets sockets = ListenSockets::bind_all(plan);
    for (std::size_t i = 0; i < 2; ++i) {
      const std::string path = plan.workers[i].listen.substr(6);
      CHECK(std::filesystem::is_socket(path));
      CHECK(is_listening(sockets.fd(i)));
    }
    CHECK(plan.workers[0].listen == "ipc://" + (dir / "node_0.sock").string());
    CHECK(plan.master_port > 0);
  }
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("is_loopback recognises loopback hosts", "[launcher][sockets]") {
  CHECK(is_loopback("127.0.0.1"));
  CHECK(is_loopback("127.1.2.3"));
  CHECK(is_loopback("localhost"));
  CHECK(is_loopback("::1"));
  CHECK(is_loopback("[::1]"));
  CHECK_FALSE(is_loopback("0.0.0.0"));
  CHECK_FALSE(is_loopback("10.0.0.1"));
  CHECK_FALSE(is_loopback("192.168.1.20"));
  CHECK_FALSE(is_loopback("::"));
  CHECK_FALSE(is_loopback(""));
}
