// SPDX-License-Identifier: MIT
// A caller's queue thread, while idle, waits in the transport's io turn (KeyedQueues::IoTurn), so
// that the calls it reads itself run on it with no hand-over: jobs end that wait, the thread
// running the io work is offered to let it go, at most one queue thread is in the turn at a
// time, a stop ends the wait, and a transport without such a turn leaves the thread sleeping as
// before. The turn here is a stand-in that only sleeps on the queue's word, as the mesh's does
// while another thread runs its io work.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rpc/executors.hpp"

namespace {

using ditask::detail::KeyedQueues;
using ditask::detail::Turn;
using ditask::detail::WakeWord;

/// The transport's side: counts the turns and offers, and how many threads are in a turn at once.
struct StandInIo {
  std::atomic<bool> can{true};
  std::atomic<int> turns{0};
  std::atomic<int> offers{0};
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};

  KeyedQueues::IoTurn turn() {
    return KeyedQueues::IoTurn{
        [this](const std::function<bool()>& done, WakeWord& word, std::atomic<bool>& would_run) {
          if (!can.load()) {
            return false;
          }
          ++turns;
          const int now = ++inside;
          int most = most_inside.load();
          while (now > most && !most_inside.compare_exchange_weak(most, now)) {
          }
          would_run.store(true);
          for (;;) {
            const std::uint32_t seen = word.value();
            if (done()) {
              break;
            }
            word.wait(seen, std::chrono::steady_clock::time_point::max());
          }
          --inside;
          return true;
        },
        [this] { ++offers; }};
  }
};

/// Submits one job to `key` and returns once it ran.
void run_one(KeyedQueues& queues, std::int64_t key) {
  std::promise<void> ran;
  REQUIRE(queues.submit(key, [&ran](Turn) { ran.set_value(); }));
  ran.get_future().get();
}

void until(const std::function<bool()>& condition) {
  while (!condition()) {
    std::this_thread::yield();
  }
}

}  // namespace

TEST_CASE(
    "rpc executors: an idle caller's thread waits in the transport's io turn, jobs end it, and the "
    "io work is offered to it",
    "[rpc][unit]") {
  StandInIo io;
  KeyedQueues queues;
  queues.set_io_turn(io.turn());
  run_one(queues, 3);  // starts the caller's thread, which then waits in the turn
  until([&] { return io.inside.load() == 1; });
  run_one(queues, 3);  // wakes it: the thread now running the io work is asked to let it go
  CHECK(io.offers.load() == 1);
  until([&] { return io.inside.load() == 1; });  // and it waits in the turn again
  CHECK(io.turns.load() == 2);
  queues.stop();
  CHECK(io.inside.load() == 0);
}

TEST_CASE(
    "rpc executors: at most one caller's thread is in the io turn, the others sleep as before",
    "[rpc][unit]") {
  StandInIo io;
  KeyedQueues queues;
  queues.set_io_turn(io.turn());
  for (int round = 0; round < 50; ++round) {
    for (std::int64_t key = 1; key <= 3; ++key) {
      run_one(queues, key);
    }
  }
  queues.stop();  // a thread in the turn or asleep: each ends
  CHECK(io.most_inside.load() == 1);
  CHECK(io.turns.load() >= 1);
  CHECK(io.inside.load() == 0);
}

TEST_CASE(
    "rpc executors: a stop ends a caller's thread waiting in the io turn, and jobs after it are "
    "refused",
    "[rpc][unit]") {
  StandInIo io;
  KeyedQueues queues;
  queues.set_io_turn(io.turn());
  run_one(queues, 9);
  until([&] { return io.inside.load() == 1; });
  queues.stop();  // joins the thread: its wait ended
  CHECK(io.inside.load() == 0);
  CHECK_FALSE(queues.submit(9, [](Turn) {}));
}

TEST_CASE(
    "rpc executors: when the transport has no io turn, an idle caller's thread sleeps as before",
    "[rpc][unit]") {
  StandInIo io;
  io.can = false;
  KeyedQueues queues;
  queues.set_io_turn(io.turn());
  for (int i = 0; i < 5; ++i) {
    run_one(queues, 4);
  }
  queues.stop();
  CHECK(io.turns.load() == 0);
  CHECK(io.offers.load() == 0);
}
