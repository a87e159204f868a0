// SPDX-License-Identifier: MIT
// What any transport does with what it received: hands it to the attached task, holds it until
// the first task attaches, and after a detach acknowledges it as unhandled. Its counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "../remote_event.hpp"
#include "transport.hpp"

namespace ditask::detail {

/// The sink of a transport's received events and notices. Thread: any (hand_over() is the io
/// thread's, in arrival order; attach/detach come from the task).
class Inbox {
 public:
  /// Gives `events` to the sink; before any sink attached they wait for it; after a detach
  /// their receipts are done as unhandled.
  void hand_over(std::vector<RemoteEvent>&& events);
  /// Gives the sink what waited, then everything from now on.
  void attach(Sink sink);
  /// No sink any more.
  void detach();

 private:
  std::mutex mutex_;  // guards the three below; held while the sink runs, so attach/detach wait for it
  Sink sink_;
  bool had_sink_ = false;
  std::vector<RemoteEvent> prestart_;
};

/// A transport's counters (TransportStats), bumped from any thread.
struct TransportCounters {
  std::atomic<std::uint64_t> sent{0}, acked{0}, received{0}, lost{0}, dropped{0}, unhandled{0};
  /// Their values now.
  TransportStats snapshot() const noexcept {
    return TransportStats{sent.load(), acked.load(), received.load(), lost.load(), dropped.load(), unhandled.load()};
  }
};

}  // namespace ditask::detail
