// SPDX-License-Identifier: MIT
// Who writes an emit to the socket: the emitting thread itself, once after each wait, or the io
// thread. docs/design.md "Threading in a worker".
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace ditask::detail {

/// Lets the calling thread write its next emit to an idle connection itself instead of waking
/// the transport's io thread (the reply path: a handler's first emit, or an emit right after a
/// wait for an event). The event bus grants it before each handler runs; waits grant it when
/// they return. Thread: any; the grant belongs to the calling thread.
void grant_inline_write() noexcept;

/// True once per grant: the caller may write the event it is sending on its own thread. A
/// thread that emits again before its next wait (a loop of emits) gets false, so those events
/// are batched by the io thread. Thread: any (the caller's own grant).
bool take_inline_write() noexcept;

/// A connection whose write a thread put off (hold_writes()); the transport's side of a hold.
class HeldWrite {
 public:
  /// Writes what is queued when no write is under way (the holding thread's, inline), or leaves
  /// it to the write under way. Thread: the holding thread.
  virtual void write_held() noexcept = 0;

 protected:
  ~HeldWrite() = default;
};

/// From now on, the calling thread's sends queue their frames without writing them or waking
/// the io thread (the served calls of a batch: their replies go in one write). The thread must
/// call release_held_writes() before it waits for anything and when the batch ends.
void hold_writes() noexcept;
/// Whether the calling thread holds its writes.
bool holding_writes() noexcept;
/// Called by a transport whose send was put off on the holding thread: `link` is written at the
/// release (once, however many sends it took).
void add_held_write(const std::shared_ptr<HeldWrite>& link);
/// Writes each connection held since hold_writes() and ends the hold. Cheap when nothing is held.
void release_held_writes() noexcept;

/// While one lives on a thread, that thread is a transport's receiving thread running user code
/// on arrival: a remote function defined with Rpc::define_inline (named `name`), or the handlers
/// of an event `name` registered with Task::on_inline (`handler`). The runtime's waits refuse
/// (before_wait()), and its sends never wait for room in a full send queue (only this thread
/// would make it). Thread: the receiving thread; scopes do not nest.
class OnArrivalScope {
 public:
  explicit OnArrivalScope(const std::string& name, bool handler = false) noexcept;
  ~OnArrivalScope();
  OnArrivalScope(const OnArrivalScope&) = delete;
  OnArrivalScope& operator=(const OnArrivalScope&) = delete;
};
/// True while the calling thread runs a function on arrival (an OnArrivalScope).
bool running_on_arrival() noexcept;
/// Before each wait of the runtime: refuses it on a thread that runs a function on arrival (the
/// wait could never end: the answer would come through this very thread), then writes what this
/// thread held (release_held_writes(): it may be what the awaited answer needs). Errors:
/// ditask::Error naming the function (or event) and what it would wait for: `what`, then `name` quoted
/// when not empty (the message is built only then).
void before_wait(std::string_view what, std::string_view name = {});

}  // namespace ditask::detail
