// SPDX-License-Identifier: MIT
// Mesh test module, part 7: a stream while its receivers are killed again and again (chaos).
// Checked by tests/integration/chaos_test.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "mesh_tests.hpp"

using namespace mesh_tests;

namespace {

// What one incarnation of a receiver handled, in a file of its own that outlives a SIGKILL (a
// shared mapping: the kernel keeps what was written). Read by the test as 6 int64 values.
struct ChaosRecord {
  std::int64_t first = -1;       // the number of the first tick it handled
  std::int64_t last = -1;        // the highest number it handled
  std::int64_t handled = 0;      // ticks handled
  std::int64_t inversions = 0;   // ticks whose number was not above every earlier one (reordered or repeated)
  std::int64_t lost = 0;         // its transport's lost count when it last handled something
  std::int64_t end = -1;         // the end's number (ticks sent to this node in all), once it came
};

// A ChaosRecord mapped from `path` (created, zeroed, then initialised). Errors: std::runtime_error.
ChaosRecord* map_chaos_record(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ::ftruncate(fd, sizeof(ChaosRecord)) != 0) {
    throw std::runtime_error("chaos: cannot create " + path);
  }
  void* at = ::mmap(nullptr, sizeof(ChaosRecord), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (at == MAP_FAILED) {
    throw std::runtime_error("chaos: cannot map " + path);
  }
  return new (at) ChaosRecord{};
}

struct ChaosSender {
  bool stop = false;
  int end_acks = 0;
  std::map<std::int64_t, std::uint64_t> left_lost;  // per receiver: the `lost` of its peer_left events
  int leaves = 0;
};

constexpr std::int64_t kChaosReceivers = 3;
constexpr std::int64_t kChaosStreaming = 1000;  // ticks an incarnation handles before it says STREAMING

// A receiver's state: made before the task starts, so it outlives the handlers (the task stops
// when the entry's `running` goes, after the entry's own locals).
struct ChaosReceiver {
  ChaosRecord* record = nullptr;
  std::mutex mutex;  // handlers may run on more than one thread
  Shared<bool> ended;
};

void chaos_receive(ditask::Task& task, const std::string& dir, ChaosReceiver& self) {
  self.record = map_chaos_record(dir + "/node" + std::to_string(node_id()) + ".attempt" + std::to_string(attempt()));
  ChaosRecord* record = self.record;
  std::mutex& mutex = self.mutex;
  Shared<bool>& ended = self.ended;
  // READY before the tick handler exists: its STREAMING (which the test waits for before it reads
  // this line) can only come after. Printed later, a tick that arrives live between on() and the
  // print could make this thread lose the race on a busy machine (a clean-clone run did).
  say("READY", "attempt=" + std::to_string(attempt()) + " pid=" + std::to_string(::getpid()));
  task.on("tick", [&task, record, &mutex](std::int64_t number) {
    bool streaming = false;
    {
      // A SIGKILL may come between any two of these stores: they are made in an order (kept by
      // the fences) in which the record never shows a number as handled that was not counted.
      std::lock_guard lock(mutex);
      record->lost = static_cast<std::int64_t>(task.router().stats().lost);
      if (record->handled == 0) {
        record->first = number;
      }
      std::atomic_signal_fence(std::memory_order_seq_cst);
      streaming = ++record->handled == kChaosStreaming;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (number <= record->last) {
        ++record->inversions;
      } else {
        record->last = number;
      }
    }
    if (streaming) {
      say("STREAMING", "attempt=" + std::to_string(attempt()) + " pid=" + std::to_string(::getpid()));
    }
  });
  task.on("end", [&task, record, &mutex, &ended](std::int64_t total) {
    {
      std::lock_guard lock(mutex);
      record->lost = static_cast<std::int64_t>(task.router().stats().lost);
      record->end = total;
    }
    ended.update([](bool& e) { e = true; });
  });
  task.ready();
  ended.wait([](bool e) { return e; }, "node 0's end", std::chrono::minutes(10));
  task.emit_to_node(0, "end_ack");
  std::lock_guard lock(mutex);
  result("attempt=" + std::to_string(attempt()) + " handled=" + std::to_string(record->handled));
}

}  // namespace

// Node 0 emits "tick"(n) to each of nodes 1-3 in turn, n counting the ticks that node was sent
// (an emit refused because the node is away, restarting, is not sent and not counted), as fast as
// it can, until SIGUSR1. Then, once every receiver is back, it sends each "end"(ticks sent to it),
// waits for their "end_ack" and prints "RESULT sent=S1,S2,S3 left_lost=L1,L2,L3 leaves=N
// refused=R", where L is the sum of the `lost` of that node's peer_left events. Each receiver
// incarnation prints "READY attempt=A pid=P", "STREAMING attempt=A pid=P" after 1000 ticks, keeps a
// ChaosRecord in dir=<folder>/node<N>.attempt<A>, and the last one ends on "end".
DITASK_MAIN(chaos_stream) {
  auto& task = ditask::task();
  const Params params;
  const std::string dir = params.text("dir", "");
  if (dir.empty()) {
    throw std::invalid_argument("chaos_stream: give dir=<folder>");
  }
  ChaosReceiver receiver;
  Shared<ChaosSender> state;
  auto running = task.start();
  if (node_id() != 0) {
    chaos_receive(task, dir, receiver);
    return;
  }
  task.on(ditask::events::peer_left, [&state](const ditask::Kwargs& peer) {
    state.update([&](ChaosSender& s) {
      s.left_lost[peer.get<std::int64_t>("node_id")] += peer.get<std::uint64_t>("lost");
      ++s.leaves;
    });
  });
  task.on("SIGUSR1", [&state] { state.update([](ChaosSender& s) { s.stop = true; }); });
  task.on("end_ack", [&state] { state.update([](ChaosSender& s) { ++s.end_acks; }); });
  task.ready();
  say("SENDING", "pid=" + std::to_string(::getpid()));
  std::array<std::int64_t, kChaosReceivers + 1> sent{};
  std::int64_t refused = 0;
  for (std::int64_t round = 0;; ++round) {
    if (round % 64 == 0 && state.get().stop) {
      break;
    }
    for (std::int64_t r = 1; r <= kChaosReceivers; ++r) {
      try {
        task.emit_to_node(r, "tick", sent[static_cast<std::size_t>(r)]);
        ++sent[static_cast<std::size_t>(r)];
      } catch (const ditask::Error&) {
        ++refused;  // away (restarting): nothing was sent
      }
    }
  }
  // The end goes to each receiver's incarnation that is there now (the test kills no more).
  for (std::int64_t r = 1; r <= kChaosReceivers; ++r) {
    for (;;) {
      auto joined = task.waiter(ditask::events::peer_joined);
      try {
        task.emit_to_node(r, "end", sent[static_cast<std::size_t>(r)]);
        break;
      } catch (const ditask::Error&) {
        if (!joined.wait(std::chrono::minutes(5))) {
          throw std::runtime_error("chaos_stream: node " + std::to_string(r) + " did not come back within 5 minutes");
        }
      }
    }
  }
  state.wait([](const ChaosSender& s) { return s.end_acks == kChaosReceivers; }, "every receiver's end_ack",
             std::chrono::minutes(5));
  const auto s = state.get();
  std::string sent_text, lost_text;
  for (std::int64_t r = 1; r <= kChaosReceivers; ++r) {
    sent_text += (r > 1 ? "," : "") + std::to_string(sent[static_cast<std::size_t>(r)]);
    const auto it = s.left_lost.find(r);
    lost_text += (r > 1 ? "," : "") + std::to_string(it == s.left_lost.end() ? 0 : it->second);
  }
  result("sent=" + sent_text + " left_lost=" + lost_text + " leaves=" + std::to_string(s.leaves) +
         " refused=" + std::to_string(refused));
}
