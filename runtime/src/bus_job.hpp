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

/// One queued event.
struct BusJob {
  // User-provided, so that a job made in place (queue_.emplace_back()) is not first zeroed whole
  // (value-initialisation of a class without one zeroes every byte, then runs the initialisers).
  BusJob() noexcept {}  // NOLINT(modernize-use-equals-default)
  std::string event;
  std::optional<EventArgs> args;        ///< local events and runtime notices
  std::optional<PackedPayload> packed;  ///< remote events, as they came
  std::shared_ptr<Receipt> receipt;     ///< remote events that go live: told once they ran
  std::shared_ptr<const EventMeta> meta;  ///< who sent it (never null once queued)
  std::uint64_t seq = 0;
  std::size_t bytes = 0;   ///< released through the receipt when it ran
  std::uint64_t order = 0; ///< position in the bus's queue (1, 2, ...)
  std::shared_ptr<HandlerEntry> only;  ///< a replay of a kept event for this handler alone
  std::shared_ptr<KeptMark> mark;      ///< set for events kept by the startup window
};

}  // namespace ditask::detail
