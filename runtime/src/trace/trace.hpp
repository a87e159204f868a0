// SPDX-License-Identifier: MIT
// The worker's side of `ditask --trace`: spans and instants recorded into a bounded ring per
// thread (no lock, no allocation per record once a thread and an event name were seen), drained
// every 250 ms by a flusher thread into the file the launcher named in DITASK_TRACE_FILE, as raw
// records (ditask/runtime/trace_part.hpp) the launcher formats and merges after the job. Off (one
// relaxed atomic load per hook) unless that variable is set.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "../periodic_thread.hpp"
#include "ditask/runtime/trace_part.hpp"

namespace ditask::detail::trace {

extern std::atomic<bool> g_on;

/// True while this worker traces. Thread: any.
inline bool on() noexcept { return g_on.load(std::memory_order_relaxed); }

/// The id of `name` (interned; allocates only the first time this thread sees it).
std::uint32_t name_id(std::string_view name);

/// Records one event on this thread's ring (dropped and counted when the ring is full).
/// `id` pairs async and flow records; `arg` is the peer node (sender, callee, caller) or -1.
void record(Phase phase, Category category, std::uint32_t name, std::uint64_t id = 0, std::int64_t arg = -1) noexcept;
/// The same with the name as text: a full ring drops the record before the name is looked up or
/// the clock read, so a thread that records faster than the flusher drains pays little.
void record(Phase phase, Category category, std::string_view name, std::uint64_t id = 0, std::int64_t arg = -1) noexcept;

/// Records a call leaving for `callee`: its span in flight (async begin, named by `function`) and
/// the start of its arrow to the callee ("call"), with one clock read. Thread: the caller's.
void record_call_start(std::string_view function, std::uint64_t id, std::int64_t callee) noexcept;

/// Names this thread's track ("dispatcher", "rpc queue"). Thread: the thread itself. Never throws.
void name_thread(std::string_view name) noexcept;

/// A span on this thread: begin now, end when destroyed. Does nothing while tracing is off.
class Span {
 public:
  Span(Category category, std::string_view name, std::int64_t arg = -1) noexcept;
  /// The same, also ending the arrow `flow_in` ("call") inside it: a served call, with one clock read.
  Span(Category category, std::string_view name, std::int64_t arg, std::uint64_t flow_in) noexcept;
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  void begin(std::string_view name, std::int64_t arg, const std::uint64_t* flow_in) noexcept;

  bool active_;
  Category category_;
  std::uint32_t name_ = 0;
};

/// A flow or async id joining a call's records on its caller and callee.
inline std::uint64_t call_id(std::int64_t caller, std::uint64_t id) noexcept {
  return (static_cast<std::uint64_t>(caller) << 40) ^ id;
}

/// Tracing for this worker's life: with DITASK_TRACE_FILE set, turns recording on and starts the
/// flusher; the destructor drains every ring a last time and closes the file. Thread: the owner's.
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  std::unique_ptr<PeriodicThread> flusher_;
};

/// Drains every ring into the file now (before the worker ends by a signal's default action).
/// Thread: any but a signal handler.
void flush_now() noexcept;

}  // namespace ditask::detail::trace
