// SPDX-License-Identifier: MIT
// A Link's acknowledgements: what the dispatcher handled (delivered), acks sent on the frames
// written anyway or alone after kAckDelay, and the peer's acks of what this side sent.
#include "connection.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "link_limits.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using namespace link_limits;

void Link::delivered_run(std::uint64_t first, std::uint64_t last, std::size_t bytes) noexcept {
  std::uint64_t watermark = 0;
  {
    std::lock_guard lock(delivered_mutex_);
    watermark = delivered_seq_.load(std::memory_order_relaxed);
    if (first == watermark + 1) {
      watermark = last;
      while (!delivered_ahead_.empty() && *delivered_ahead_.begin() <= watermark + 1) {
        watermark = std::max(watermark, *delivered_ahead_.begin());
        delivered_ahead_.erase(delivered_ahead_.begin());
      }
      delivered_seq_.store(watermark);
    } else {
      for (std::uint64_t seq = std::max(first, watermark + 1); seq <= last; ++seq) {
        delivered_ahead_.insert(seq);
      }
    }
  }
  const std::size_t before = inbound_bytes_.fetch_sub(bytes);
  const bool resume = read_paused_.load() && before - bytes <= inbound_limit_ / 2;
  // Usually no wake-up: the ack rides on the next frame written, or the io thread's ack timer
  // sends it. At once only while the peer waits for it, or after a long stream.
  // seq_cst, as the io thread's ack_eager_ store and delivered_seq_ load: one of the two sides
  // sees the other's write, so a waiting peer's ack is never left to the timer.
  const bool ack_now = ack_eager_.load() ||
                       watermark >= ack_sent_seen_.load(std::memory_order_relaxed) + kAckEvery;
  if (resume || (ack_now && !ack_scheduled_.exchange(true))) {
    try {
      post_io([self = shared_from_this(), resume] {
        self->send_ack();
        if (resume && self->read_paused_.exchange(false)) {
          self->read_more();
        }
      });
    } catch (...) {  // a closed io_context: nothing to acknowledge any more
    }
  }
}

void Link::done(std::uint64_t seq, std::size_t bytes, bool handled) noexcept {
  if (!handled) {
    owner_.on_unhandled();
  }
  delivered(seq, bytes);
}

bool Link::ack_due_locked() const noexcept { return delivered_seq_.load() > ack_sent_; }

void Link::send_ack() {
  ack_scheduled_ = false;
  std::unique_lock lock(mutex_);
  if (closed_ || bye_written_ || !ack_due_locked()) {  // nothing may follow our bye
    return;
  }
  if (write_active_) {
    ack_wanted_ = true;  // the writer's next batch carries it
    return;
  }
  schedule_write_locked(lock);  // a batch of the ack alone
}

void Link::arm_ack_timer() {
  if (ack_timer_armed_ || closed_here_) {  // a closed link's timer would only keep it alive
    return;
  }
  ack_timer_armed_ = true;
  ack_timer_.expires_after(ack_tick_);
  ack_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    self->ack_timer_armed_ = false;
    if (ec || self->closed_here_) {  // cancelled, or closed after this tick was queued
      return;
    }
    // Acks that rode on frames since the last tick will ride on the next ones too: wait a tick,
    // a longer one each time (kAckDelayRiding), so a steady exchange is rarely woken for nothing.
    const std::uint64_t sent = self->ack_sent_seen_.load();
    if (sent == self->ack_sent_at_tick_) {
      self->send_ack();
      self->ack_tick_ = kAckDelay;
    } else {
      self->ack_tick_ = std::min(self->ack_tick_ * 2, kAckDelayRiding);
    }
    self->ack_sent_at_tick_ = sent;
    bool again = false;
    {
      std::lock_guard lock(self->mutex_);
      // Some are still with the handlers, or not acknowledged yet (and still may be).
      again = !self->closed_ && !self->bye_written_ &&
              (self->received_seq_ > self->delivered_seq_.load() || self->ack_due_locked());
    }
    if (again) {
      self->arm_ack_timer();
    } else {
      self->ack_tick_ = kAckDelay;  // nothing outstanding: the next read starts a short tick
    }
  });
}

void Link::on_ack(std::uint64_t seq) {
  bool notify = false;
  {
    std::lock_guard lock(mutex_);
    if (seq > acked_seq_ && seq <= next_seq_) {
      owner_.on_acked(seq - acked_seq_);
      acked_seq_ = seq;
    }
    notify = waiters_ > 0;
  }
  if (notify) {
    changed_.notify_all();
  }
}

std::uint64_t Link::unacked() const {
  std::lock_guard lock(mutex_);
  return next_seq_ - acked_seq_;
}

void Link::request_ack() {
  if (unacked() > 0) {
    send_control(FrameType::ping, nullptr);
  }
}

bool Link::wait_acked(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  ++waiters_;
  const bool done = changed_.wait_until(lock, deadline, [&] { return closed_ || acked_seq_ == next_seq_; });
  --waiters_;
  return done && acked_seq_ == next_seq_;
}

}  // namespace ditask::detail::mesh
