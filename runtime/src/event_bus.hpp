// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ditask/event_args.hpp"
#include "ditask/export.hpp"
#include "ditask/handler.hpp"
#include "remote_event.hpp"

namespace ditask::detail {

/// What one Waiter waits on. Thread: guarded by its own mutex.
struct WaitState {
  std::string event;
  std::uint64_t handler_id = 0;
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<EventArgs> result;  // guarded by mutex
  bool aborted = false;             // guarded by mutex
};

/// The local event system of one started task: a handler table and one dispatcher thread that
/// runs queued events in FIFO order, each event's handlers in registration order.
/// Thread: every method is safe from any thread; handlers run on the dispatcher thread.
class DITASK_API EventBus : public std::enable_shared_from_this<EventBus> {
 public:
  /// Receives each handler failure (on the dispatcher thread).
  using ErrorSink = std::function<void(const std::string& event, std::exception_ptr error)>;

  explicit EventBus(ErrorSink sink);
  ~EventBus();
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  /// Lets events run: the dispatcher thread starts with the first queued event.
  void start();
  /// Runs what is queued, joins the dispatcher, drops every handler and aborts every waiter.
  void stop() noexcept;

  /// Registers a handler; `once` handlers are removed before their only call. `packed` (may be
  /// empty) is its fast path for events whose arguments came packed from a peer.
  std::uint64_t add(std::string event, RawHandler fn, bool once, PackedHandler packed = nullptr);
  /// Removes every handler of events matching the fnmatch `pattern`; returns how many.
  std::size_t remove_matching(std::string_view pattern);
  /// Removes handler `id` of `event`; false when absent.
  bool remove(std::string_view event, std::uint64_t id);
  /// Handlers registered for `event`.
  std::size_t count(std::string_view event) const;

  /// Queues an event; false once stopped.
  bool post(std::string event, EventArgs args);
  /// Queues events from peers, in order. While the startup window is open, an event with no
  /// handler is held (bounded) until a handler for it is registered or the window closes.
  /// Each receipt is told when the event ran, was held, or was dropped.
  void post_remote(std::vector<RemoteEvent>&& events);
  /// Ends the startup window: held events are dropped (and counted as unhandled).
  void close_parking();
  /// Events held now (a test aid).
  std::size_t parked() const;
  /// Waits until every event queued before the call ran. No-op on the dispatcher thread.
  void drain();
  /// True on the dispatcher thread.
  bool on_dispatcher_thread() const noexcept;

  /// Registers a one-shot waiter for `event` (already aborted when abort mode is on).
  std::shared_ptr<WaitState> add_waiter(std::string event);
  /// Wakes every current waiter with nothing and, while `on`, every new one at once.
  void set_abort(bool on);

 private:
  struct Entry {
    std::uint64_t id;
    RawHandler fn;
    PackedHandler packed;
    bool once;
    std::atomic<bool> alive{true};
    std::weak_ptr<WaitState> waiter;
  };
  struct Job {
    std::string event;
    std::optional<EventArgs> args;        // local events and runtime notices
    std::optional<PackedPayload> packed;  // remote events, as they came
    std::shared_ptr<Receipt> receipt = nullptr;  // remote events only
    std::uint64_t seq = 0;
    std::size_t bytes = 0;         // released through the receipt when it ran
    std::size_t parked_bytes = 0;  // counted against the holding bound while parked
  };

  void dispatch_loop();
  void queued_locked();  // after a push onto queue_: counts it, starts the dispatcher if needed
  void start_dispatcher_locked();
  void dispatch(const Job& job);
  void abort_all_waiters_locked();
  void release_parked_locked(const std::string& event);
  std::vector<Job> take_parked_locked();
  static void drop_parked(std::vector<Job>& jobs) noexcept;
  bool claim(Entry& entry);

  ErrorSink sink_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;
  std::condition_variable done_;
  std::map<std::string, std::vector<std::shared_ptr<Entry>>, std::less<>> handlers_;  // guarded
  std::vector<Job> queue_;           // guarded by mutex_
  std::uint64_t next_id_ = 1;        // guarded by mutex_
  std::uint64_t posted_ = 0;         // guarded by mutex_
  std::uint64_t dispatched_ = 0;     // guarded by mutex_
  bool started_ = false;             // guarded by mutex_: start() was called
  bool stopping_ = false;            // guarded by mutex_
  bool abort_ = false;               // guarded by mutex_
  bool finished_ = false;            // guarded by mutex_: the dispatcher loop has ended
  int drain_waiters_ = 0;            // guarded by mutex_: threads in drain()
  bool parking_ = true;              // guarded by mutex_: the startup window is open
  std::map<std::string, std::deque<Job>, std::less<>> parked_;  // guarded by mutex_
  std::size_t parked_count_ = 0;     // guarded by mutex_
  std::size_t parked_bytes_ = 0;     // guarded by mutex_
  bool warned_park_full_ = false;    // guarded by mutex_
  std::vector<std::shared_ptr<Entry>> dispatch_entries_;  // dispatcher thread only
  std::vector<Job> batch_;                                 // dispatcher thread only
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
};

}  // namespace ditask::detail
