// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "wake_word.hpp"
#include "bus_job.hpp"
#include "failure_slot.hpp"
#include "ditask/event_args.hpp"
#include "ditask/export.hpp"
#include "ditask/handler.hpp"
#include "remote_event.hpp"
#include "startup_window.hpp"

namespace ditask::detail {

/// What one Waiter waits on. Thread: guarded by its own mutex.
struct WaitState {
  std::string event;
  std::shared_ptr<FailureSlot> failures_slot;  // set by Task::waiter: where wait() finds failures
  std::uint64_t handler_id = 0;
  std::mutex mutex;
  WakeWord changed;                 // moved after result, aborted or failures changed
  std::optional<EventArgs> result;  // guarded by mutex
  bool aborted = false;             // guarded by mutex
  std::uint64_t failures = 0;       // guarded by mutex: handler failures seen while it waited
};

/// The local event system of one started task: a handler table and one dispatcher thread that
/// runs queued events in FIFO order, each event's handlers in registration order. A handler
/// sees the events queued after its registration, plus, while the startup window is open, the
/// remote events the window kept (StartupWindow).
/// Thread: every method is safe from any thread; handlers run on the dispatcher thread.
class EventBus : public std::enable_shared_from_this<EventBus> {
 public:
  /// Receives each handler failure (on the dispatcher thread).
  using ErrorSink = std::function<void(const std::string& event, std::exception_ptr error)>;

  explicit EventBus(ErrorSink sink);
  ~EventBus();
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  /// Lets events run: the dispatcher thread starts with the first queued event.
  void start();
  /// Runs what is queued, joins the dispatcher, ends the startup window, drops every handler and
  /// aborts every waiter.
  void stop() noexcept;

  /// Registers a handler; `once` handlers are removed before their only call. `packed` (may be
  /// empty) is its fast path for events whose arguments came packed from a peer. While the
  /// startup window is open it also gets the window's kept events of its name (replays).
  /// `on_arrival`: a remote event whose handlers all are such runs on the thread that received
  /// it when the bus is idle (post_remote()).
  std::uint64_t add(std::string event, ErasedHandler fn, bool once, PackedHandler packed = nullptr,
                    bool on_arrival = false);
  /// Removes every handler of events matching the fnmatch `pattern`; returns how many.
  std::size_t remove_matching(std::string_view pattern);
  /// Removes handler `id` of `event`; false when absent. `keep_interest`: the name stays in the
  /// interest set (a waiter's: the next wait for it would add it again at once).
  bool remove(std::string_view event, std::uint64_t id, bool keep_interest = false);
  /// Handlers registered for `event`.
  std::size_t count(std::string_view event) const;

  /// Queues an event from this process (its meta is local_meta()); false once stopped.
  bool post(std::string event, EventArgs args);
  /// Sets who this process's own events come from (the node id, attempt and labels once the
  /// task knows them). Call before start().
  void set_local_meta(std::shared_ptr<const EventMeta> meta);
  /// Queues events from peers, in order. While the startup window is open each one is also
  /// kept (bounded), and one without a handler waits there instead of running. Each receipt is
  /// told when the event ran, was kept, or was dropped.
  /// When the bus is idle (nothing queued or running, the window closed), the leading events
  /// whose handlers all run on arrival (on_inline handlers, waiters) run here, on the calling
  /// thread, before the rest is queued: the dispatcher waits meanwhile, so order holds.
  void post_remote(std::vector<RemoteEvent>&& events);
  /// Ends the startup window: kept events no handler saw are dropped (counted as unhandled).
  void end_startup_window();
  /// Events the startup window keeps now (a test aid).
  std::size_t kept() const;
  /// Events queued for the dispatcher and not yet run (the live status line's backlog).
  std::size_t backlog() const;
  /// Waits until every event queued before the call ran. No-op on the dispatcher thread.
  void drain();
  /// True on the dispatcher thread.
  bool on_dispatcher_thread() const noexcept;

  /// Who hears which event names this task handles (a transport that sends each peer only
  /// those): `fn` gets the whole set once the startup window closed (until then every name
  /// counts), and again whenever a name gets its first handler or off() removes its last.
  /// Called on the thread that changed the set, before that call returns, one at a time.
  using InterestListener = std::function<void(const std::set<std::string>& names)>;
  void set_interest_listener(InterestListener fn);

  /// Registers a one-shot waiter for `event` (already aborted when abort mode is on).
  std::shared_ptr<WaitState> add_waiter(std::string event);
  /// Wakes every current waiter with nothing and, while `on`, every new one at once.
  void set_abort(bool on);
  /// Tells every current waiter that a handler failed (so Waiter::wait can surface it).
  void notify_failure();

 private:
  using Entry = HandlerEntry;

  // The handlers a dispatching thread looked up last, and the ones that take the current job.
  // One for the dispatcher thread, one for the thread that borrowed its role (post_remote).
  struct DispatchScratch {
    std::vector<std::shared_ptr<Entry>> cached_entries;
    std::string cached_event;
    std::uint64_t cached_version = ~std::uint64_t{0};
    std::vector<Entry*> entries;
  };

  void dispatch_loop();
  // How many leading `events` run on arrival now: the bus is idle and each one's live handlers
  // all run on arrival (there is at least one). Caller holds mutex_.
  std::size_t arrival_prefix_locked(const std::vector<RemoteEvent>& events) const;
  // Runs the jobs borrowed_ took into arrivals_ on this thread, then gives the dispatcher its
  // role back (and wakes it for what was queued meanwhile).
  void run_arrivals() noexcept;
  // True on a thread inside run_arrivals() of this bus.
  bool running_arrivals_here() const noexcept;
  // Queues `job` (gives it its order), starts the dispatcher if needed. Caller holds mutex_.
  void push_locked(BusJob job);
  // Gives `job`, just put at the end of the queue, its order; starts the dispatcher if needed.
  // Caller holds mutex_.
  void queued_locked(BusJob& job);
  // The queue's last segment, a new one when there is none. Caller holds mutex_.
  std::vector<BusJob>& tail_locked();
  // An empty vector, one the dispatcher gave back when there is one. Caller holds mutex_.
  std::vector<BusJob> spare_locked();
  void start_dispatcher_locked();
  // Registers `entry` with its replays; its id, or 0 for a waiter refused in abort mode.
  std::uint64_t register_entry(std::string event, std::shared_ptr<Entry> entry);
  void dispatch(const BusJob& job, ReceiptRun& told, DispatchScratch& scratch);
  // Marks handlers_ changed (for the dispatcher's cache). Caller holds mutex_.
  void handlers_changed_locked() noexcept;
  // After a job of a kept event ran: true when it was the last pending one of an event that no
  // handler saw and whose window has closed (then it counts as unhandled). Caller holds mutex_.
  static bool settle_locked(KeptMark& mark, bool handled);
  void close_window(std::unique_lock<std::mutex>& lock);
  // remove_matching() without telling the interest listener.
  std::size_t erase_matching(std::string_view pattern);
  // Tells the interest listener the names now, when the window has closed.
  void tell_interest();
  void abort_all_waiters_locked();
  // Applies `change` to every live waiter's state under its lock, then wakes it. Caller holds mutex_.
  void change_waiters_locked(const std::function<void(WaitState&)>& change);
  bool claim(Entry& entry);

  ErrorSink sink_;
  std::shared_ptr<const EventMeta> local_meta_ = std::make_shared<const EventMeta>();  // set before start()
  mutable std::mutex mutex_;
  std::mutex interest_mutex_;        // serializes the listener's calls (taken before mutex_)
  InterestListener interest_listener_;  // guarded by mutex_
  std::set<std::string> interest_;      // guarded by mutex_: names with a handler (waiters and once handlers stay)
  WakeWord queued_;  // moved after each push and at stop(): wakes the dispatcher
  std::condition_variable done_;
  std::map<std::string, std::vector<std::shared_ptr<Entry>>, std::less<>> handlers_;  // guarded
  // Changed (under mutex_) whenever handlers_ is; read without it by the dispatcher's cache.
  std::atomic<std::uint64_t> handlers_version_{0};
  // Guarded by mutex_: the queue, in segments (never empty ones), each a transport's read or
  // local jobs; queued_jobs_ counts their jobs; spare_ holds emptied segments for reuse.
  std::vector<std::vector<BusJob>> queue_;
  std::size_t queued_jobs_ = 0;
  std::vector<std::vector<BusJob>> spare_;
  std::uint64_t next_id_ = 1;        // guarded by mutex_
  std::uint64_t posted_ = 0;         // guarded by mutex_: the last job's order
  std::uint64_t dispatched_ = 0;     // guarded by mutex_
  bool started_ = false;             // guarded by mutex_: start() was called
  bool stopping_ = false;            // guarded by mutex_
  bool abort_ = false;               // guarded by mutex_
  bool finished_ = false;            // guarded by mutex_: the dispatcher loop has ended
  int drain_waiters_ = 0;            // guarded by mutex_: threads in drain()
  StartupWindow window_;             // guarded by mutex_
  bool warned_window_full_ = false;  // guarded by mutex_
  std::vector<BusJob> replays_;      // guarded by mutex_: scratch for register_entry
  DispatchScratch dispatcher_scratch_;  // dispatcher thread only
  // Guarded by mutex_: the dispatcher runs a batch; a receiving thread runs events on arrival
  // (then the dispatcher waits), the jobs it runs.
  bool running_batch_ = false;
  bool borrowed_ = false;
  std::vector<BusJob> arrivals_;        // the borrowing thread's while borrowed_
  DispatchScratch arrival_scratch_;     // the borrowing thread's while borrowed_
  std::vector<std::vector<BusJob>> batch_;                 // dispatcher thread only
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
};

}  // namespace ditask::detail
