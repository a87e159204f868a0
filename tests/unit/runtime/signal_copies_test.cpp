// SPDX-License-Identifier: MIT
// The two copies of a Slurm step's signal (slurmstepd's and the launcher's) make one event, in
// either order, merged or not; copies from anyone else are events of their own.
#include "signal_copies.hpp"

#include <catch2/catch.hpp>

using ditask::detail::classify_sender;
using ditask::detail::SignalCopies;
using ditask::detail::SignalSender;

TEST_CASE("signal copies: who sent it", "[signals][unit]") {
  CHECK(classify_sender(10, 20, 10) == SignalSender::step_daemon);
  CHECK(classify_sender(20, 20, 10) == SignalSender::launcher);
  CHECK(classify_sender(30, 20, 10) == SignalSender::other);
  // Not under Slurm: nothing is paired, the launcher's copy is an event like any other.
  CHECK(classify_sender(20, 20, 0) == SignalSender::other);
}

TEST_CASE("signal copies: slurmstepd's copy and the launcher's make one event, in either order",
          "[signals][unit]") {
  SignalCopies c;
  CHECK(c.add(1, 0, 0) == 1);  // slurmstepd's copy first: the event
  CHECK(c.add(0, 1, 0) == 0);  // the launcher's forward of the same signal: none
  CHECK(c.add(0, 1, 0) == 1);  // the next scancel, the launcher first this time
  CHECK(c.add(1, 0, 0) == 0);
  CHECK(c.add(1, 1, 0) == 1);  // both seen at one wake-up
}

TEST_CASE("signal copies: copies that merged while pending still make one event per signal sent",
          "[signals][unit]") {
  SignalCopies c;
  CHECK(c.add(1, 0, 0) == 1);  // both copies of the first signal merged into slurmstepd's
  CHECK(c.add(0, 1, 0) == 0);  // the second signal: the launcher's copy pairs with the first...
  CHECK(c.add(1, 0, 0) == 1);  // ...and slurmstepd's copy of the second is its event
}

TEST_CASE("signal copies: only the launcher's copies (proctrack/pgid, a signal to the launcher) are each an event",
          "[signals][unit]") {
  SignalCopies c;
  CHECK(c.add(0, 1, 0) == 1);
  CHECK(c.add(0, 1, 0) == 1);
  CHECK(c.add(0, 2, 0) == 2);
  CHECK(c.add(0, 0, 3) == 3);  // kill -USR1 <worker> by hand: never paired
}
