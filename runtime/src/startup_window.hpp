// SPDX-License-Identifier: MIT
// The startup window of a task's event bus: remote events kept (bounded) from the task's start
// until its first run(), task().ready() or stop(), so every handler registered in that window sees
// them as if it had been registered before they came. Thread: not thread-safe; the event bus
// calls it under its own mutex.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bus_job.hpp"

namespace ditask::detail {

class StartupWindow {
 public:
  /// At most this many events, and this many bytes, are kept.
  static constexpr std::size_t kMaxEvents = 65536;
  static constexpr std::size_t kMaxBytes = 64U << 20;

  /// True until close().
  bool open() const noexcept { return open_; }

  /// Keeps a copy of the remote event `job` (its event, arguments and sequence number), when
  /// open and within the bounds; `once_present` says a once handler or waiter will take it live.
  /// Returns its mark (shared with the live job, if any), or null when not kept.
  std::shared_ptr<KeptMark> keep(const BusJob& job, bool once_present);

  /// The replays a handler registered now gets (appended to `out`, in arrival order): every kept
  /// event of its name for an on() handler; the oldest one no once handler took yet for a once
  /// handler or waiter (then marked as taken, and the entry as replayed).
  void replay_for(const std::shared_ptr<HandlerEntry>& entry, const std::string& event,
                  std::vector<BusJob>& out);

  /// Ends the window and drops what was kept. Returns the marks of kept events no handler saw
  /// and none is pending for (to count as unhandled now).
  std::vector<std::shared_ptr<KeptMark>> close();

  /// Events kept now (a test aid).
  std::size_t size() const noexcept { return count_; }

 private:
  struct Kept {
    BusJob copy;  // without receipt
    std::shared_ptr<KeptMark> mark;
  };
  struct Topic {
    std::deque<Kept> events;
    std::size_t once_taken = 0;  // events[0, once_taken) were taken by once handlers
  };

  bool open_ = true;
  std::map<std::string, Topic, std::less<>> topics_;
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace ditask::detail
