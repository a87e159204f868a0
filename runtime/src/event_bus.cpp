// SPDX-License-Identifier: MIT
#include "event_bus.hpp"

#include "trace/trace.hpp"

#include <fnmatch.h>

#include <algorithm>

#include "batch_thread.hpp"
#include "ditask/runtime/log.hpp"
#include "transport/inline_write.hpp"

namespace ditask::detail {

EventBus::EventBus(ErrorSink sink) : sink_(std::move(sink)) {}

EventBus::~EventBus() { stop(); }

void EventBus::start() {
  std::lock_guard lock(mutex_);
  started_ = true;
  if (!queue_.empty()) {  // queued before start(): they run now
    start_dispatcher_locked();
  }
}

namespace {
// Emptied segments kept for reuse (each keeps its capacity).
constexpr std::size_t kSpareSegments = 8;
}  // namespace

std::vector<BusJob>& EventBus::tail_locked() {
  if (queue_.empty()) {
    queue_.push_back(spare_locked());
  }
  return queue_.back();
}

std::vector<BusJob> EventBus::spare_locked() {
  if (spare_.empty()) {
    return {};
  }
  std::vector<BusJob> spare = std::move(spare_.back());
  spare_.pop_back();
  return spare;
}

void EventBus::push_locked(BusJob job) {
  auto& tail = tail_locked();
  tail.push_back(std::move(job));
  ++queued_jobs_;
  queued_locked(tail.back());
}

void EventBus::queued_locked(BusJob& job) {
  job.order = ++posted_;
  start_dispatcher_locked();
}

void EventBus::start_dispatcher_locked() {
  // Started by the first event that needs it: a worker that never handles an event (or only
  // keeps early ones) never pays for the thread.
  if (started_ && !stopping_ && !thread_.joinable()) {
    thread_ = std::thread([this] {
      become_batch_thread();
      dispatch_loop();
    });
  }
}

void EventBus::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.wake_all();
  if (thread_.joinable()) {
    if (on_dispatcher_thread() || running_arrivals_here()) {
      // Stopping from a handler cannot join itself (nor the dispatcher, which waits for this
      // thread's arrivals to end); the loop ends after this handler.
      DITASK_LOG(error, "events") << "task stopped from inside an event handler";
      thread_.detach();
    } else {
      thread_.join();
    }
  }
  std::unique_lock lock(mutex_);
  if (!running_arrivals_here()) {  // handlers running on arrival end first, as the dispatcher's did
    done_.wait(lock, [&] { return !borrowed_; });
  }
  close_window(lock);
  abort_ = true;
  abort_all_waiters_locked();
  for (auto& [event, entries] : handlers_) {
    for (auto& entry : entries) {
      entry->alive = false;
    }
  }
  handlers_.clear();
  handlers_changed_locked();
}

void EventBus::set_local_meta(std::shared_ptr<const EventMeta> meta) {
  std::lock_guard lock(mutex_);
  local_meta_ = std::move(meta);
}

std::uint64_t EventBus::add(std::string event, ErasedHandler fn, bool once, PackedHandler packed, bool on_arrival) {
  auto entry = std::make_shared<Entry>();
  entry->fn = std::move(fn);
  entry->packed = std::move(packed);
  entry->once = once;
  entry->on_arrival = on_arrival;
  return register_entry(std::move(event), std::move(entry));
}

std::uint64_t EventBus::register_entry(std::string event, std::shared_ptr<Entry> entry) {
  bool replayed = false;
  bool grew = false;
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (auto state = entry->waiter.lock(); state && abort_) {
      state->aborted = true;  // the task failed or stops: a new wait ends at once
      return 0;
    }
    id = entry->id = next_id_++;
    grew = interest_.insert(event).second;
    entry->since = posted_;  // what is queued now came before it
    replays_.clear();
    window_.replay_for(entry, event, replays_);
    handlers_[std::move(event)].push_back(std::move(entry));
    handlers_changed_locked();
    for (auto& job : replays_) {
      push_locked(std::move(job));
    }
    replayed = !replays_.empty();
    replays_.clear();
  }
  if (replayed) {
    queued_.wake_all();
  }
  if (grew) {
    tell_interest();  // before on() returns: what this thread emits next comes after it
  }
  return id;
}

void EventBus::set_interest_listener(InterestListener fn) {
  {
    std::lock_guard lock(mutex_);
    interest_listener_ = std::move(fn);
  }
  tell_interest();
}

void EventBus::tell_interest() {
  const std::lock_guard serial(interest_mutex_);
  std::set<std::string> names;
  InterestListener listener;
  {
    std::lock_guard lock(mutex_);
    if (window_.open() || !interest_listener_) {
      return;
    }
    names = interest_;
    listener = interest_listener_;
  }
  listener(names);
}

void EventBus::post_remote(std::vector<RemoteEvent>&& events) {
  struct Told {
    std::shared_ptr<Receipt> receipt;
    std::uint64_t seq;
    std::size_t bytes;
    bool handled;
  };
  std::vector<Told> told;  // receipts are told outside the lock
  bool queued = false;
  bool arrive = false;  // this thread borrowed the dispatcher's role for arrivals_
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ && !window_.open() && !events.empty()) {
      // The usual case: every event goes live, in the order it came, so the transport's vector
      // joins the queue whole and the transport gets an emptied one back: a read's events are
      // not built a second time.
      for (auto& e : events) {
        if (!e.meta) {
          e.meta = local_meta_;
        }
        e.order = ++posted_;
      }
      // The leading events that may run on arrival are this thread's to run (after the lock).
      if (const std::size_t now = arrival_prefix_locked(events); now > 0) {
        borrowed_ = arrive = true;
        arrivals_.clear();
        std::move(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(now), std::back_inserter(arrivals_));
        events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(now));
      }
      if (!events.empty()) {
        queued_jobs_ += events.size();
        queue_.push_back(std::move(events));
        events = spare_locked();
        start_dispatcher_locked();
        queued = !borrowed_;  // else the dispatcher is woken when the borrow ends
      }
    }
    // A batch is mostly runs of one event: its handlers are looked up once per run (they cannot
    // change while the lock is held). The key in handlers_ of the last event found there:
    const std::string* looked_up = nullptr;
    bool live = false;
    bool once_live = false;
    for (auto& e : events) {
      if (stopping_) {
        told.push_back({std::move(e.receipt), e.seq, e.bytes, false});
        continue;
      }
      // Who takes it live: registered handlers, except once handlers already given a kept event.
      if (looked_up == nullptr || *looked_up != e.event) {
        live = false;
        once_live = false;
        looked_up = nullptr;
        if (auto it = handlers_.find(e.event); it != handlers_.end()) {
          looked_up = &it->first;
          for (const auto& entry : it->second) {
            const bool taken = entry->once && entry->replayed;
            live = live || !taken;
            once_live = once_live || (entry->once && !taken);
          }
        }
      }
      auto& tail = tail_locked();
      BusJob& job = tail.emplace_back(std::move(e));
      if (!job.meta) {
        job.meta = local_meta_;
      }
      if (window_.open()) {
        job.mark = window_.keep(job, once_live);
        if (!job.mark && !warned_window_full_) {
          warned_window_full_ = true;
          DITASK_LOG(warn, "events") << "more than " << StartupWindow::kMaxEvents << " events (or "
                                     << (StartupWindow::kMaxBytes >> 20)
                                     << " MiB) arrived in the startup window: handlers registered from now on "
                                        "do not see the earlier ones, and events without a handler are dropped "
                                        "(call ditask::task().ready() once the handlers are registered)";
        }
        if (!live) {
          // Kept for a later handler (acknowledged now), or dropped when the window is full.
          told.push_back({std::move(job.receipt), job.seq, job.bytes, job.mark != nullptr});
          tail.pop_back();
          if (tail.empty()) {
            spare_.push_back(std::move(tail));
            queue_.pop_back();
          }
          continue;
        }
        if (job.mark) {
          ++job.mark->pending;
        }
      }
      ++queued_jobs_;
      queued_locked(job);
      queued = true;
    }
  }
  if (queued) {  // a kept event needs no dispatcher (waking it for nothing costs two switches)
    queued_.wake_all();
  }
  for (auto& t : told) {
    if (t.receipt) {
      t.receipt->done(t.seq, t.bytes, t.handled);
    }
  }
  if (arrive) {
    run_arrivals();
  }
}

void EventBus::end_startup_window() {
  {
    std::unique_lock lock(mutex_);
    if (!window_.open()) {
      return;
    }
    close_window(lock);
  }
  tell_interest();
}

void EventBus::close_window(std::unique_lock<std::mutex>& lock) {
  if (!window_.open()) {
    return;
  }
  auto unhandled = window_.close();
  lock.unlock();
  if (!unhandled.empty()) {
    DITASK_LOG(debug, "events") << unhandled.size()
                                << " remote events had no handler when the startup window closed";
  }
  for (auto& mark : unhandled) {
    if (mark->receipt) {
      mark->receipt->done(mark->seq, 0, false);  // acknowledged when kept: this only counts it
    }
  }
  lock.lock();
}

std::size_t EventBus::kept() const {
  std::lock_guard lock(mutex_);
  return window_.size();
}

std::size_t EventBus::backlog() const {
  std::lock_guard lock(mutex_);
  return queued_jobs_;
}

std::size_t EventBus::remove_matching(std::string_view pattern) {
  std::size_t removed = erase_matching(pattern);
  if (removed > 0) {
    tell_interest();
  }
  return removed;
}

std::size_t EventBus::erase_matching(std::string_view pattern) {
  std::string pat(pattern);
  std::lock_guard lock(mutex_);
  std::size_t removed = 0;
  for (auto it = handlers_.begin(); it != handlers_.end();) {
    if (::fnmatch(pat.c_str(), it->first.c_str(), 0) == 0) {
      for (auto& entry : it->second) {
        entry->alive = false;
      }
      removed += it->second.size();
      interest_.erase(it->first);
      it = handlers_.erase(it);
      handlers_changed_locked();
    } else {
      ++it;
    }
  }
  return removed;
}

bool EventBus::remove(std::string_view event, std::uint64_t id, bool keep_interest) {
  bool shrunk = false;
  {
    std::lock_guard lock(mutex_);
    auto it = handlers_.find(event);
    if (it == handlers_.end()) {
      return false;
    }
    auto& entries = it->second;
    auto pos = std::find_if(entries.begin(), entries.end(), [id](const auto& e) { return e->id == id; });
    if (pos == entries.end()) {
      return false;
    }
    (*pos)->alive = false;
    entries.erase(pos);
    handlers_changed_locked();
    if (entries.empty()) {
      if (!keep_interest) {
        interest_.erase(it->first);
        shrunk = true;
      }
      handlers_.erase(it);
    }
  }
  if (shrunk) {
    tell_interest();
  }
  return true;
}

std::size_t EventBus::count(std::string_view event) const {
  std::lock_guard lock(mutex_);
  auto it = handlers_.find(event);
  return it == handlers_.end() ? 0 : it->second.size();
}

bool EventBus::post(std::string event, EventArgs args) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      return false;
    }
    BusJob job;
    job.event = std::move(event);
    job.args = std::move(args);
    job.meta = local_meta_;
    push_locked(std::move(job));
  }
  queued_.wake_all();
  return true;
}

void EventBus::drain() {
  if (on_dispatcher_thread()) {
    return;
  }
  before_wait("the event handlers");  // a handler may wait for what this thread held
  std::unique_lock lock(mutex_);
  const std::uint64_t target = posted_;
  ++drain_waiters_;
  done_.wait(lock, [&] { return dispatched_ >= target || finished_; });
  --drain_waiters_;
}

bool EventBus::on_dispatcher_thread() const noexcept {
  return thread_id_.load() == std::this_thread::get_id();
}

void EventBus::dispatch_loop() {
  thread_id_ = std::this_thread::get_id();
  trace::name_thread("dispatcher");
  std::unique_lock lock(mutex_);
  while (true) {
    while ((!stopping_ && queue_.empty()) || borrowed_) {  // borrowed: a receiving thread dispatches
      const std::uint32_t seen = queued_.value();
      lock.unlock();
      queued_.wait(seen, std::chrono::steady_clock::time_point::max());
      lock.lock();
    }
    if (queue_.empty()) {
      finished_ = true;  // stopping, and everything queued before stop() has run
      done_.notify_all();
      return;
    }
    batch_.swap(queue_);  // both keep their capacity: no allocation per batch
    queued_jobs_ = 0;
    running_batch_ = true;
    lock.unlock();
    {
      ReceiptRun told;  // what ran is told in runs (at most ReceiptRun::kMaxRun events late)
      for (const auto& segment : batch_) {
        for (const auto& job : segment) {
          dispatch(job, told, dispatcher_scratch_);
        }
      }
    }
    if (batch_.size() > kSpareSegments) {
      batch_.resize(kSpareSegments);  // what no spare slot would take is freed outside the lock
    }
    for (auto& segment : batch_) {
      segment.clear();  // the jobs go here, outside the lock; the segments keep their capacity
    }
    lock.lock();
    for (auto& segment : batch_) {
      if (spare_.size() < kSpareSegments) {
        spare_.push_back(std::move(segment));
      }
    }
    batch_.clear();
    running_batch_ = false;
    dispatched_ = posted_ - queued_jobs_;
    if (drain_waiters_ > 0) {  // a wake-up per batch costs a context switch nobody needs
      done_.notify_all();
    }
  }
}

bool EventBus::claim(Entry& entry) {
  if (!entry.once) {
    return entry.alive.load();
  }
  // A once handler is unregistered before its call, so it can never run twice.
  if (!entry.alive.exchange(false)) {
    return false;
  }
  std::lock_guard lock(mutex_);
  for (auto& [event, entries] : handlers_) {
    auto pos = std::find_if(entries.begin(), entries.end(),
                            [&](const auto& e) { return e.get() == &entry; });
    if (pos != entries.end()) {
      entries.erase(pos);
      if (entries.empty()) {
        handlers_.erase(event);
      }
      handlers_changed_locked();
      break;
    }
  }
  return true;
}

bool EventBus::settle_locked(KeptMark& mark, bool handled) {
  mark.handled = mark.handled || handled;
  --mark.pending;
  return mark.closed && mark.pending == 0 && !mark.handled;
}

void EventBus::handlers_changed_locked() noexcept {
  handlers_version_.store(handlers_version_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void EventBus::dispatch(const BusJob& job, ReceiptRun& told, DispatchScratch& scratch) {
  // The handlers of the last event dispatched are kept while no handler is added or removed
  // (a run of one event takes the lock once). Using them unlocked is safe: one removed since
  // is skipped by claim(), one added since is newer than the job and would be skipped anyway.
  auto& registered = scratch.cached_entries;  // the dispatching thread's, like the rest of this cache
  if (job.only) {
    scratch.cached_version = ~std::uint64_t{0};
    registered.clear();
    registered.push_back(job.only);  // a kept event replayed for the handler registered later
  } else if (scratch.cached_version != handlers_version_.load(std::memory_order_acquire) ||
             scratch.cached_event != job.event) {
    std::lock_guard lock(mutex_);
    registered.clear();
    scratch.cached_version = handlers_version_.load(std::memory_order_relaxed);
    scratch.cached_event = job.event;
    if (auto it = handlers_.find(job.event); it != handlers_.end()) {
      registered = it->second;
    }
  }
  auto& entries = scratch.entries;  // reused, so no allocation per event
  entries.clear();
  for (const auto& entry : registered) {
    if (job.only || entry->since < job.order) {  // a handler registered after the emit does not see it
      entries.push_back(entry.get());
    }
  }
  bool handled = false;
  // Packed arguments are decoded to JSON only for a handler without a fast path (or whose fast
  // path declined them), and then once for all such handlers.
  std::optional<EventArgs> unpacked;
  const EventArgs* args = job.args ? &*job.args : nullptr;
  for (auto& entry : entries) {
    if (!claim(*entry)) {
      continue;
    }
    handled = true;
    if (!holding_writes()) {  // arrivals hold their writes for one write at the end
      grant_inline_write();   // the handler's first emit (its reply) goes out from this thread
    }
    const trace::Span span(trace::Category::event, job.event, job.meta ? job.meta->sender : -1);  // --trace
    try {
      if (!args && entry->packed && entry->packed(job.packed->view(), *job.meta)) {
        continue;
      }
      if (!args) {
        args = &unpacked.emplace(job.packed->unpack());
      }
      entry->fn(*args, *job.meta);
    } catch (...) {
      sink_(job.event, std::current_exception());
      notify_failure();  // a Waiter::wait in progress surfaces it
    }
  }
  if (!handled) {
    DITASK_LOG(trace, "events") << "no handler for event '" << job.event << "'";
  }
  entries.clear();
  if (!job.mark) {
    told.add(job.receipt, job.seq, job.bytes, handled);
    return;
  }
  told.flush();  // in order with what follows
  // A kept event: whether any handler saw it is decided when the window closed and nothing of
  // it is pending any more.
  bool unhandled = false;
  {
    std::lock_guard lock(mutex_);
    unhandled = settle_locked(*job.mark, handled);
  }
  if (job.receipt) {
    job.receipt->done(job.seq, job.bytes, true);
  }
  if (unhandled && job.mark->receipt) {
    job.mark->receipt->done(job.mark->seq, 0, false);
  }
}

}  // namespace ditask::detail
