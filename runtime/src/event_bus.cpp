// SPDX-License-Identifier: MIT
#include "event_bus.hpp"

#include <fnmatch.h>

#include <algorithm>

#include "ditask/runtime/log.hpp"

namespace ditask::detail {

namespace {
constexpr std::size_t kMaxParkedEvents = 65536;
constexpr std::size_t kMaxParkedBytes = 64u << 20;
}  // namespace

EventBus::EventBus(ErrorSink sink) : sink_(std::move(sink)) {}

EventBus::~EventBus() { stop(); }

void EventBus::start() {
  std::lock_guard lock(mutex_);
  started_ = true;
  if (!queue_.empty()) {  // queued before start(): they run now
    start_dispatcher_locked();
  }
}

void EventBus::queued_locked() {
  ++posted_;
  start_dispatcher_locked();
}

void EventBus::start_dispatcher_locked() {
  // Started by the first event that needs it: a worker that never handles an event (or only
  // holds early ones) never pays for the thread.
  if (started_ && !stopping_ && !thread_.joinable()) {
    thread_ = std::thread([this] { dispatch_loop(); });
  }
}

void EventBus::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  if (thread_.joinable()) {
    if (on_dispatcher_thread()) {
      // Stopping from a handler cannot join itself; the loop ends after this handler.
      DITASK_LOG(error, "events") << "task stopped from inside an event handler";
      thread_.detach();
    } else {
      thread_.join();
    }
  }
  std::vector<Job> parked;
  {
    std::lock_guard lock(mutex_);
    parked = take_parked_locked();
  }
  drop_parked(parked);
  std::lock_guard lock(mutex_);
  abort_ = true;
  abort_all_waiters_locked();
  for (auto& [event, entries] : handlers_) {
    for (auto& entry : entries) {
      entry->alive = false;
    }
  }
  handlers_.clear();
}

std::uint64_t EventBus::add(std::string event, RawHandler fn, bool once, PackedHandler packed) {
  std::lock_guard lock(mutex_);
  auto entry = std::make_shared<Entry>();
  const std::uint64_t id = next_id_++;
  entry->id = id;
  entry->fn = std::move(fn);
  entry->packed = std::move(packed);
  entry->once = once;
  handlers_[event].push_back(std::move(entry));
  release_parked_locked(event);
  return id;
}

void EventBus::release_parked_locked(const std::string& event) {
  auto it = parked_.find(event);
  if (it == parked_.end()) {
    return;
  }
  for (auto& job : it->second) {
    parked_count_ -= 1;
    parked_bytes_ -= job.parked_bytes;
    queue_.push_back(std::move(job));
    queued_locked();
  }
  parked_.erase(it);
  queued_.notify_one();
}

std::vector<EventBus::Job> EventBus::take_parked_locked() {
  std::vector<Job> jobs;
  jobs.reserve(parked_count_);
  for (auto& [event, held] : parked_) {
    jobs.insert(jobs.end(), std::make_move_iterator(held.begin()), std::make_move_iterator(held.end()));
  }
  parked_.clear();
  parked_count_ = parked_bytes_ = 0;
  return jobs;
}

void EventBus::drop_parked(std::vector<Job>& jobs) noexcept {
  for (auto& job : jobs) {
    if (job.receipt) {
      job.receipt->done(job.seq, 0, false);  // acknowledged when held: this only counts it
    }
  }
}

void EventBus::post_remote(std::vector<RemoteEvent>&& events) {
  std::vector<std::pair<std::shared_ptr<Receipt>, RemoteEvent*>> held;
  std::vector<RemoteEvent*> refused;
  bool queued = false;
  {
    std::lock_guard lock(mutex_);
    for (auto& e : events) {
      if (stopping_) {
        refused.push_back(&e);
        continue;
      }
      if (parking_ && handlers_.find(e.event) == handlers_.end()) {
        if (parked_count_ >= kMaxParkedEvents || parked_bytes_ + e.bytes > kMaxParkedBytes) {
          if (!warned_park_full_) {
            warned_park_full_ = true;
            DITASK_LOG(warn, "events") << "more than " << kMaxParkedEvents << " events (or "
                                       << (kMaxParkedBytes >> 20)
                                       << " MiB) arrived before a handler for them was registered; "
                                          "dropping the excess (register handlers before run())";
          }
          refused.push_back(&e);
          continue;
        }
        ++parked_count_;
        parked_bytes_ += e.bytes;
        held.emplace_back(e.receipt, &e);
        // Acknowledged (and its bytes released) now: when it runs later, the receipt only
        // learns whether a handler saw it.
        parked_[e.event].push_back(Job{e.event, std::move(e.args), std::move(e.packed), e.receipt, e.seq, 0, e.bytes});
        continue;
      }
      queue_.push_back(Job{std::move(e.event), std::move(e.args), std::move(e.packed), std::move(e.receipt), e.seq,
                           e.bytes});
      queued_locked();
      queued = true;
    }
  }
  if (queued) {  // a held event needs no dispatcher (waking it for nothing costs two switches)
    queued_.notify_one();
  }
  for (auto& [receipt, e] : held) {
    if (receipt) {
      receipt->done(e->seq, e->bytes, true);  // held by the process: acknowledged
    }
  }
  for (auto* e : refused) {
    if (e->receipt) {
      e->receipt->done(e->seq, e->bytes, false);
    }
  }
}

void EventBus::close_parking() {
  std::vector<Job> dropped;
  {
    std::lock_guard lock(mutex_);
    if (!parking_) {
      return;
    }
    parking_ = false;
    dropped = take_parked_locked();
  }
  if (!dropped.empty()) {
    DITASK_LOG(debug, "events") << dropped.size()
                                << " remote events had no handler when the startup window closed";
  }
  drop_parked(dropped);
}

std::size_t EventBus::parked() const {
  std::lock_guard lock(mutex_);
  return parked_count_;
}

std::size_t EventBus::remove_matching(std::string_view pattern) {
  std::string pat(pattern);
  std::lock_guard lock(mutex_);
  std::size_t removed = 0;
  for (auto it = handlers_.begin(); it != handlers_.end();) {
    if (::fnmatch(pat.c_str(), it->first.c_str(), 0) == 0) {
      for (auto& entry : it->second) {
        entry->alive = false;
      }
      removed += it->second.size();
      it = handlers_.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

bool EventBus::remove(std::string_view event, std::uint64_t id) {
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
  if (entries.empty()) {
    handlers_.erase(it);
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
    queue_.push_back(Job{std::move(event), std::move(args), std::nullopt});
    queued_locked();
  }
  queued_.notify_one();
  return true;
}

void EventBus::drain() {
  if (on_dispatcher_thread()) {
    return;
  }
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
  std::unique_lock lock(mutex_);
  while (true) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) {
      finished_ = true;  // stopping, and everything queued before stop() has run
      done_.notify_all();
      return;
    }
    batch_.swap(queue_);  // both keep their capacity: no allocation per batch
    lock.unlock();
    for (const auto& job : batch_) {
      dispatch(job);
    }
    batch_.clear();
    lock.lock();
    dispatched_ = posted_ - queue_.size();
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
      break;
    }
  }
  return true;
}

void EventBus::dispatch(const Job& job) {
  auto& entries = dispatch_entries_;  // dispatcher thread only: reused, so no allocation per event
  entries.clear();
  {
    std::lock_guard lock(mutex_);
    auto it = handlers_.find(job.event);
    if (it != handlers_.end()) {
      entries.assign(it->second.begin(), it->second.end());
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
    try {
      if (!args && entry->packed && entry->packed(job.packed->view())) {
        continue;
      }
      if (!args) {
        args = &unpacked.emplace(job.packed->unpack());
      }
      entry->fn(*args);
    } catch (...) {
      sink_(job.event, std::current_exception());
    }
  }
  if (!handled) {
    DITASK_LOG(trace, "events") << "no handler for event '" << job.event << "'";
  }
  entries.clear();
  if (job.receipt) {
    job.receipt->done(job.seq, job.bytes, handled);
  }
}

std::shared_ptr<WaitState> EventBus::add_waiter(std::string event) {
  auto state = std::make_shared<WaitState>();
  state->event = event;
  std::weak_ptr<WaitState> weak = state;
  RawHandler fn = [weak](const EventArgs& args) {
    if (auto s = weak.lock()) {
      {
        std::lock_guard lock(s->mutex);
        s->result = args;
      }
      s->changed.notify_all();
    }
  };
  std::lock_guard lock(mutex_);
  if (abort_) {
    state->aborted = true;
    return state;
  }
  auto entry = std::make_shared<Entry>();
  entry->id = next_id_++;
  entry->fn = std::move(fn);
  entry->once = true;
  entry->waiter = state;
  state->handler_id = entry->id;
  handlers_[event].push_back(std::move(entry));
  release_parked_locked(event);
  return state;
}

void EventBus::set_abort(bool on) {
  std::lock_guard lock(mutex_);
  abort_ = on;
  if (on) {
    abort_all_waiters_locked();
  }
}

void EventBus::abort_all_waiters_locked() {
  for (auto& [event, entries] : handlers_) {
    for (auto& entry : entries) {
      if (auto s = entry->waiter.lock()) {
        {
          std::lock_guard lock(s->mutex);
          s->aborted = true;
        }
        s->changed.notify_all();
      }
    }
  }
}

}  // namespace ditask::detail
