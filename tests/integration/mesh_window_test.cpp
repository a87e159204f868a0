// SPDX-License-Identifier: MIT
// The startup window across real workers: events that arrive before their handlers reach every
// handler registered in the window, exactly once and in order, whatever the gap between the
// registrations, and a wait for another event does not end the window.
#include <string>

#include <catch2/catch.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using namespace ditask::test::mesh;

TEST_CASE("mesh: early events reach two handlers registered 0, 1 and 50 ms apart, each exactly once",
          "[mesh][integration][window]") {
  for (const char* gap : {"0", "1", "50"}) {
    for (long run = 0; run < (10 + kVolumeDivisor - 1) / kVolumeDivisor; ++run) {
      CAPTURE(gap, run);
      auto r = run_ditask(mesh_args("early_handlers", 2, {"--", "count=3", std::string("gap_ms=") + gap}), 30s);
      INFO(describe(r));
      REQUIRE(r.exit_code == 0);
      CHECK(result_of(r.out, 0) == "a=0,1,2 b=0,1,2");
      CHECK(result_of(r.out, 1) == "sent=4");
    }
  }
}

TEST_CASE("mesh: a wait for one event does not end the startup window for the others",
          "[mesh][integration][window]") {
  // Node 0 first waits for "end" (sent after every ping), then registers its ping handlers.
  auto r = run_ditask(mesh_args("early_handlers", 2, {"--", "count=5", "gap_ms=1", "wait_first=1"}), 30s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK(result_of(r.out, 0) == "a=0,1,2,3,4 b=0,1,2,3,4");
}
