// SPDX-License-Identifier: MIT
// The seam between the task layer and the network: what a transport (the mesh today, Redis next)
// offers a worker's task. docs/design.md "Layout".
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../remote_event.hpp"
#include "../wake_word.hpp"
#include "ditask/event_args.hpp"
#include "ditask/router.hpp"

namespace ditask::detail {

/// Where a transport hands received events and membership notices (the running task's bus).
/// Called on the transport's io thread, in arrival order.
using Sink = std::function<void(std::vector<RemoteEvent>&&)>;

/// Who an event goes to.
struct SendTarget {
  std::optional<std::int64_t> node;  ///< one node
  std::string label;                 ///< connected peers with a matching label (when non-empty)
  /// Every peer.
  static SendTarget all() { return {}; }
};

/// One worker's connection to its peers. A worker has one for its life; each started task
/// attaches to it and detaches at stop. Thread: every method is safe from any thread except the
/// transport's own io thread (named by the implementation).
class Transport {
 public:
  virtual ~Transport() = default;

  /// Its name, as EventMeta::transport reports it ("mesh").
  virtual std::string_view name() const noexcept = 0;
  /// Flushes to the sink what arrived before and hands it everything from now on.
  virtual void attach(Sink sink) = 0;
  /// No sink any more: later events are acknowledged and counted as unhandled.
  virtual void detach() = 0;
  /// Blocks until every expected peer has joined.
  /// Errors: ditask::Error naming each missing peer (and why) after the startup timeout.
  virtual void wait_ready() = 0;
  /// Sends one event. Errors: ditask::Error when a peer cannot take it (frame limit, a send
  /// queue full for the send timeout) or for an unknown node.
  virtual void send(const SendTarget& target, std::string_view event, const EventArgs& args) = 0;
  /// send() for arguments already encoded as an event payload (detail::pack_event).
  virtual void send_packed(const SendTarget& target, std::string_view event,
                           std::span<const std::uint8_t> payload) = 0;
  /// send_packed() of a payload the transport may keep (a large one: no copy).
  virtual void send_owned(const SendTarget& target, std::string_view event, std::vector<std::uint8_t>&& payload) {
    send_packed(target, event, payload);
  }
  /// The event names this node's task handles (nullopt: all of them, e.g. while its startup
  /// window is open or no task is attached). A transport may then send each peer only what it
  /// handles, in order with the events (the mesh sends everything and the receiver counts the
  /// rest unhandled). Default: nothing to do.
  virtual void set_interest(std::optional<std::set<std::string>> names) { (void)names; }
  /// Connected peers, by node id.
  virtual std::vector<PeerInfo> peers() const = 0;
  /// Counters since it started.
  virtual TransportStats stats() const = 0;
  /// The counters a worker that ends without shutdown() (SIGTERM) reports, taken once just
  /// before it dies: from now on a peer that leaves is neither counted lost nor reported lost in
  /// the log, so the log and --summary-json agree. Default: stats().
  virtual TransportStats final_stats() { return stats(); }
  /// Waits for a remote call's answer (or an idle queue thread for its next calls) until
  /// `done()` (true) or `deadline` (false), running the transport's io work on the calling thread
  /// whenever no other thread runs it (it reads its answer and writes its next calls itself),
  /// else sleeping on `word` (moved after `done()` turned true) with `would_run` set.
  /// `runs_jobs`: the thread runs served calls next, so its later posts bring the transport's
  /// own thread back instead of waiting for its next wait. nullopt when this transport has no
  /// such wait: the caller waits as usual. Default: nullopt.
  virtual std::optional<bool> wait_running_io(const std::function<bool()>& done, WakeWord& word,
                                              std::atomic<bool>& would_run,
                                              std::chrono::steady_clock::time_point deadline, bool runs_jobs) {
    (void)done, (void)word, (void)would_run, (void)deadline, (void)runs_jobs;
    return std::nullopt;
  }
  /// Called by the thread running the io work after it woke a waiter whose `would_run` was set:
  /// the io thread lets the io work go to it. Default: nothing.
  virtual void offer_io() noexcept {}
  /// The calling thread is about to run something long: when no thread runs the io work now (a
  /// waiter let it go), the transport's own thread takes it back at once. Default: nothing.
  virtual void want_io() noexcept {}
  /// Says goodbye to the peers and closes. `failed`: peers should expect a restart. Idempotent.
  virtual void shutdown(bool failed = false) noexcept = 0;
};

/// Sends an event payload made by detail::pack_event; a large one in this thread's pack buffer
/// is handed over whole (Transport::send_owned) instead of copied.
void send_wire(Transport& transport, const SendTarget& target, std::string_view event,
               const std::vector<std::uint8_t>& wire);

/// The worker's transport, created and started on the first call with `create` once worker
/// mode set its plan (null in a plain process). Errors: ditask::Error when it cannot start.
std::shared_ptr<Transport> worker_transport(bool create);
/// Shuts the worker's transport down (worker exit). `failed`: the entry failed. Returns the
/// transport's counters after the shutdown (all zero when there was none).
TransportStats shutdown_worker_transport(bool failed) noexcept;

}  // namespace ditask::detail
