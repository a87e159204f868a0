// SPDX-License-Identifier: MIT
// What the event bus queues and registers: a handler entry, one queued event (a job), and the
// accounting of an event kept for the startup window. Guarded by the bus's mutex unless noted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ditask/event_args.hpp"
#include "ditask/handler.hpp"
#include "remote_event.hpp"

namespace ditask::detail {

struct WaitState;

/// One registered handler.
struct HandlerEntry {
  std::uint64_t id = 0;
  ErasedHandler fn;
  PackedHandler packed;
  bool once = false;
  std::atomic<bool> alive{true};  ///< cleared by off() and by a once handler's claim
  std::uint64_t since = 0;        ///< jobs queued up to this order came before it: not its own
  bool replayed = false;          ///< a once handler already given a kept event
  std::weak_ptr<WaitState> waiter;
  /// May run on the thread that received the event, when the bus is idle: handlers registered
  /// with on_inline, and waiters (they only store the event and wake their thread).
  bool on_arrival = false;
};

/// The fate of one event kept for the startup window: whether any handler saw it, and what is
/// still queued for it. When the window closes, a kept event no handler saw counts as unhandled.
struct KeptMark {
  std::shared_ptr<Receipt> receipt;  ///< told "unhandled" at the end, when no handler saw it
  std::uint64_t seq = 0;
  bool handled = false;
  int pending = 0;      ///< queued jobs (live or replays) of this event not yet dispatched
  bool closed = false;  ///< the window closed while jobs were pending: the last one counts it
};

/// One queued event: a remote event as its transport built it, or a local one; its meta is never
/// null once queued.
using BusJob = RemoteEvent;

}  // namespace ditask::detail
