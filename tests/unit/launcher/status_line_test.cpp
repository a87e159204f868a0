// SPDX-License-Identifier: MIT
// The status line's text, and --status auto on a descriptor that is not a terminal.
#include "status_line.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>

using ditask::launcher::format_status;
using ditask::launcher::StatusFigures;

TEST_CASE("status line: the text names the counts, the rates, the slowest worker and the time", "[status]") {
  StatusFigures f;
  f.running = 3;
  f.restarting = 1;
  f.exited = 2;
  f.events_per_second = 12345;
  f.calls_per_second = 410;
  f.slowest_node = 7;
  f.slowest_backlog = 1200;
  f.elapsed_seconds = 65.9;
  CHECK(format_status(f) ==
        "ditask: 3 running, 1 restarting, 2 exited | 12.3k events/s, 410 calls/s | slowest: node 7 (1.2k queued) | 1:05");
  f.slowest_node.reset();
  f.events_per_second = 4.2e6;
  f.elapsed_seconds = 3723;
  CHECK(format_status(f) == "ditask: 3 running, 1 restarting, 2 exited | 4.2M events/s, 410 calls/s | slowest: - | 1:02:03");
}

TEST_CASE("status line: auto means a terminal, on and off mean themselves", "[status]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  CHECK_FALSE(ditask::launcher::status_wanted("auto", fds[1]));
  CHECK(ditask::launcher::status_wanted("on", fds[1]));
  CHECK_FALSE(ditask::launcher::status_wanted("off", fds[1]));
  ::close(fds[0]);
  ::close(fds[1]);
}
