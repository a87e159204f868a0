// SPDX-License-Identifier: MIT
// A job of 128 workers on one machine (the size issue 41's tests hold; scripts/bench.sh scale goes
// to 512): every worker becomes ready, and 100 numbered broadcast events from the last worker reach
// each of the other 127 exactly once and in order, none lost or dropped, over a relaying star (a
// spoke has one connection) and the full mesh.
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // 128 instrumented workers need gigabytes of shadow memory
#else
constexpr bool kSanitized = false;
#endif

// Runs bench_mesh's scale entry with 128 workers, 100 waves and `topology` flags; checks every worker's line.
void check_scale(const std::vector<std::string>& topology, int spoke_fds_at_most) {
  if (kSanitized) {
    WARN("skipped: 128 workers under a sanitizer need several GB; the plain debug and release builds run it");
    return;
  }
  std::vector<std::string> args{"--package", module_path("bench_mesh"), "--main", "scale", "--parallel-workers", "128",
                                "--timeout", "240"};
  args.insert(args.end(), topology.begin(), topology.end());
  args.insert(args.end(), {"--", "timeout_s=200", "waves=100"});
  const auto r = run_ditask(args, 300s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const auto lines = lines_with(r.out, "bench_mesh scale ");
  REQUIRE(lines.size() == 128);
  const std::regex fields(
      R"(node=(\d+) peers=(\d+) .* received=(\d+) out_of_order=(\d+) lost=(\d+) dropped=(\d+) vmrss_kb=\d+ fds=(\d+))");
  int senders = 0;
  for (const auto& line : lines) {
    std::smatch m;
    REQUIRE(std::regex_search(line, m, fields));
    const int node = std::stoi(m[1]);
    const int received = std::stoi(m[3]);
    INFO(line);
    if (node == 127) {
      CHECK(received == 0);  // the broadcaster
      ++senders;
    } else {
      CHECK(received == 100);  // all 100, and in order (below): each exactly once
    }
    CHECK(m[4] == "0");  // out of order
    CHECK(m[5] == "0");  // lost
    CHECK(m[6] == "0");  // dropped
    if (node != 0) {
      CHECK(std::stoi(m[7]) <= spoke_fds_at_most);
    }
  }
  CHECK(senders == 1);
}

}  // namespace

TEST_CASE("scale: 128 workers over a relaying star: all ready, a spoke's 100 broadcasts reach the 127 others once each, in order, "
          "and a spoke keeps one connection",
          "[scale][integration]") {
  // A spoke: stdin/out/err, its listening socket, its link to the hub, the io thread's epoll and
  // eventfd, the timer and signal descriptors: a handful, not 127 links.
  check_scale({"--topology", "star", "--relay"}, 16);
}

TEST_CASE("scale: 128 workers in a full mesh: all ready and 100 broadcasts reach the 127 others once each, in order",
          "[scale][integration]") {
  check_scale({}, 1024);
}
