// SPDX-License-Identifier: MIT
// Chaos: node 0 streams numbered events to nodes 1-3 while the receivers are SIGKILLed again and
// again under --auto-recover (and, over Redis, redis-server is restarted three times as well). Every
// incarnation must handle its events in order and once, a later incarnation only events after an
// earlier one's, and every event sent must be handled or counted lost: by the receiver (a gap in
// its sender's numbers) or by the sender (unacknowledged when the receiver left). None silently.
// The module is plugins/mesh_tests/chaos.cpp. DITASK_CHAOS_KILLS=N makes a longer run by hand.
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace ditask::test;
using namespace ditask::test::mesh;
using namespace std::chrono_literals;

namespace {

// One receiver incarnation's record (plugins/mesh_tests/chaos.cpp: ChaosRecord, six int64 values).
struct Incarnation {
  std::int64_t first = -1, last = -1, handled = 0, inversions = 0, lost = 0, end = -1;
};

Incarnation read_record(const std::string& path) {
  Incarnation r;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::int64_t values[6] = {};
  in.read(reinterpret_cast<char*>(values), sizeof values);
  REQUIRE(in.gcount() == static_cast<std::streamsize>(sizeof values));
  r.first = values[0];
  r.last = values[1];
  r.handled = values[2];
  r.inversions = values[3];
  r.lost = values[4];
  r.end = values[5];
  return r;
}

// The numbers of "a,b,c".
std::vector<std::int64_t> numbers_of(const std::string& list) {
  std::vector<std::int64_t> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const auto comma = list.find(',', at);
    out.push_back(std::stoll(list.substr(at, comma - at)));
    if (comma == std::string::npos) {
      break;
    }
    at = comma + 1;
  }
  return out;
}

// The events `node`'s incarnations counted lost, as their transports logged each gap ("[node N]
// ... K event(s) from node 0 never arrived"). A record's `lost` is refreshed only when its next
// event is handled, so an incarnation killed after it counted a gap (and told the sender those
// numbers were done with) but before that has them only here.
std::int64_t logged_gaps(const std::string& err, int node) {
  const std::string tag = "[node " + std::to_string(node) + "] ";
  const std::string said = " event(s) from node 0 never arrived";
  std::int64_t total = 0;
  std::size_t at = 0;
  while ((at = err.find(tag, at)) != std::string::npos) {
    const auto end = err.find('\n', at);
    const std::string line = err.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at += tag.size();
    const auto where = line.find(said);
    if (where == std::string::npos) {
      continue;
    }
    const auto start = line.rfind(' ', where - 1);
    total += std::stoll(line.substr(start + 1, where - start - 1));
  }
  return total;
}

int kills_wanted() {
  if (const char* text = std::getenv("DITASK_CHAOS_KILLS")) {
    return std::atoi(text);
  }
  return static_cast<int>(std::max(4L, 24 / kVolumeDivisor));
}

void run_chaos(const std::string& transport) {
  const Over over(transport);
  const TempDir dir;
  const int kills = kills_wanted();
  DitaskProcess p;
  p.start(over.args(mesh_args("chaos_stream", 4,
                              {"--auto-recover", "--max-retries", "100000", "--restart-backoff", "0.01", "--",
                               "dir=" + dir.path()})));
  p.require_line("[node 0] SENDING pid=", 40s);
  std::map<int, int> attempt;  // receiver -> its incarnation now
  auto streaming = [&](int node) {
    return "[node " + std::to_string(node) + "] STREAMING attempt=" + std::to_string(attempt[node]) + " pid=";
  };
  auto ready = [&](int node) {
    return "[node " + std::to_string(node) + "] READY attempt=" + std::to_string(attempt[node]) + " pid=";
  };
  for (int node = 1; node <= 3; ++node) {
    attempt[node] = 0;
    p.require_line(streaming(node), 40s);
  }
  std::mt19937 rng(20261205u);
  for (int k = 0; k < kills; ++k) {
    const int node = 1 + static_cast<int>(rng() % 3);
    // Killed while its incarnation streams: it handled events, and more are on their way.
    p.require_line(streaming(node), 40s);
    const auto pids = numbers_after(p.out(), ready(node));
    REQUIRE(pids.size() == 1);
    REQUIRE(::kill(static_cast<pid_t>(pids[0]), SIGKILL) == 0);
    if (over.redis() != nullptr && (k == kills / 4 || k == kills / 2 || k == 3 * kills / 4)) {
      over.redis()->restart();  // everything it held is gone, the workers reconnect
    }
    ++attempt[node];
    p.require_line(ready(node), 40s);
  }
  for (int node = 1; node <= 3; ++node) {
    p.require_line(streaming(node), 40s);  // the last incarnations stream too
  }
  const auto senders = numbers_after(p.out(), "[node 0] SENDING pid=");
  REQUIRE(senders.size() == 1);
  REQUIRE(::kill(static_cast<pid_t>(senders[0]), SIGUSR1) == 0);
  auto r = p.wait(60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const auto line = result_of(r.out, 0);
  INFO("node 0: " << line);
  const auto sent = numbers_of(field(line, "sent"));
  const auto left_lost = numbers_of(field(line, "left_lost"));
  REQUIRE(sent.size() == 3);
  REQUIRE(left_lost.size() == 3);
  for (int node = 1; node <= 3; ++node) {
    const auto n = static_cast<std::size_t>(node - 1);
    std::int64_t handled = 0, counted_by_receivers = 0, previous_last = -1;
    std::string all_attempts;
    for (int a = 0; a <= attempt[node]; ++a) {
      const auto rec = read_record(dir.file("node" + std::to_string(node) + ".attempt" + std::to_string(a)));
      all_attempts += " [" + std::to_string(a) + ": " + std::to_string(rec.first) + ".." + std::to_string(rec.last) +
                      " h=" + std::to_string(rec.handled) + " lost=" + std::to_string(rec.lost) + "]";
      INFO("node " << node << " attempt " << a << ": first=" << rec.first << " last=" << rec.last << " handled="
                   << rec.handled << " inversions=" << rec.inversions << " lost=" << rec.lost << " end=" << rec.end);
      // In order and once within an incarnation; a later one only gets later events.
      CHECK(rec.inversions == 0);
      if (rec.handled > 0) {
        CHECK(rec.first > previous_last);
        previous_last = rec.last;
        // What it skipped between its first and its last event, it counted lost.
        CHECK(rec.last - rec.first + 1 - rec.handled <= rec.lost);
      }
      // The last incarnation got the end, with the number of events sent to this node.
      CHECK((a == attempt[node]) == (rec.end >= 0));
      if (a == attempt[node]) {
        CHECK(rec.end == sent[n]);
        CHECK(rec.handled > 0);
        CHECK(sent[n] - rec.first - rec.handled <= rec.lost);  // from its first event to the end
      }
      handled += rec.handled;
      counted_by_receivers += rec.lost;
    }
    // Every event sent was handled by some incarnation, or counted lost by one of the two ends.
    // Both the records and the log lines are lower bounds of what the receivers counted.
    const std::int64_t logged = logged_gaps(r.err, node);
    INFO("node " << node << ": sent=" << sent[n] << " handled=" << handled << " counted lost by the sender="
                 << left_lost[n] << " by the receivers=" << counted_by_receivers << " (logged " << logged << ")");
    counted_by_receivers = std::max(counted_by_receivers, logged);
    INFO("attempts:" << all_attempts);
    CHECK(sent[n] - handled <= left_lost[n] + counted_by_receivers);
  }
}

}  // namespace

TEST_CASE("chaos: receivers killed again and again over the mesh: each incarnation in order, nothing lost silently",
          "[integration][chaos]") {
  run_chaos("mesh");
}

TEST_CASE("chaos: receivers killed again and again over Redis, Redis restarted three times: each incarnation in "
          "order, nothing lost silently",
          "[integration][chaos][redis]") {
  run_chaos("redis");
}
