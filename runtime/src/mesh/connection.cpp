// SPDX-License-Identifier: MIT
#include "connection.hpp"

#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "ditask/runtime/log.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;

namespace {
// The read buffer starts small (heap memory, no mmap/munmap per connection: a job of N workers
// has N*(N-1) of them) and grows while reads fill it (a stream of events).
constexpr std::size_t kFirstReadChunk = 16 * 1024;
constexpr std::size_t kMaxReadChunk = 256 * 1024;
constexpr std::size_t kMaxBatchFrames = 4096;
constexpr std::size_t kMaxBatchBytes = 4u << 20;
constexpr std::size_t kStageBelow = 16 * 1024;  // payloads up to this size are copied, not shared
constexpr std::size_t kFramesChunk = 256 * 1024;  // a run of copied frames grows up to about this
constexpr std::size_t kSpareBuffers = 4;
}  // namespace

Link::Link(Socket socket, std::string peer, bool dialled, std::string own_nonce, Owner& owner,
           std::size_t max_frame_bytes, std::size_t queue_bytes, std::chrono::milliseconds hello_timeout,
           std::shared_ptr<ReadBufferPool> read_buffers)
    : handshake(dialled, std::move(own_nonce)),
      socket_(std::move(socket)),
      dialled_(dialled),
      owner_(owner),
      hello_timer_(socket_.get_executor()),
      linger_timer_(socket_.get_executor()),
      decoder_(max_frame_bytes),
      read_pool_(std::move(read_buffers)),
      read_capacity_(kFirstReadChunk),
      queue_bytes_(queue_bytes),
      inbound_limit_(queue_bytes),
      peer_name_(std::move(peer)) {
  hello_timer_.expires_after(hello_timeout);
  if (read_pool_ && read_pool_->size() == kFirstReadChunk) {
    pooled_read_ = read_pool_->take();
  }
  if (pooled_read_ == nullptr) {
    own_read_.reset(new std::uint8_t[kFirstReadChunk]);  // not zeroed
  }
  read_buffer_ = pooled_read_ ? pooled_read_ : own_read_.get();
}

Link::~Link() {
  if (pooled_read_ != nullptr) {
    read_pool_->give_back(pooled_read_);
  }
}

std::size_t Link::first_read_bytes() noexcept { return kFirstReadChunk; }

std::string Link::peer() const {
  std::lock_guard lock(mutex_);
  return peer_name_;
}

void Link::set_peer_name(std::string name) {
  std::lock_guard lock(mutex_);
  peer_name_ = std::move(name);
}

void Link::start() {
  auto self = shared_from_this();
  hello_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (!ec && !self->established && !self->handshake.refused()) {
      DITASK_LOG(warn, "mesh") << "closing connection with " << self->peer()
                               << ": no hello within the hello timeout";
      self->close_now("no hello");
    }
  });
  read_more();
}

void Link::stop_hello_timer() { hello_timer_.cancel(); }

void Link::read_more() {
  if (reading_) {
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return;
    }
  }
  if (inbound_bytes_.load() > inbound_limit_) {
    read_paused_ = true;
    // delivered() may have drained everything between the check and the flag.
    if (inbound_bytes_.load() > inbound_limit_) {
      return;
    }
    read_paused_ = false;
  }
  reading_ = true;
  socket_.async_read_some(asio::buffer(read_buffer_, read_capacity_),
                          [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                            self->on_read(ec, n);
                          });
}

void Link::on_read(const boost::system::error_code& ec, std::size_t n) {
  reading_ = false;
  if (ec) {
    if (decoder_.buffered() > 0 && !decoder_.poisoned()) {
      DITASK_LOG(warn, "mesh") << "connection with " << peer() << " ended inside a frame ("
                               << decoder_.buffered() << " bytes of it received): " << ec.message();
    }
    if (got_bye_) {
      close_now(leave_close_reason_.empty() ? "bye" : leave_close_reason_);
    } else if (!leave_close_reason_.empty()) {
      close_now(leave_close_reason_);
    } else {
      close_now(ec == asio::error::eof ? "connection lost: the peer closed it"
                                       : "connection lost: " + ec.message());
    }
    return;
  }
  auto result = decoder_.feed(std::span<const std::uint8_t>(read_buffer_, n));
  if (n == read_capacity_ && read_capacity_ < kMaxReadChunk) {
    read_capacity_ *= 4;
    own_read_.reset(new std::uint8_t[read_capacity_]);
    read_buffer_ = own_read_.get();
    if (pooled_read_ != nullptr) {
      read_pool_->give_back(std::exchange(pooled_read_, nullptr));
    }
  }
  auto self = shared_from_this();
  for (auto& frame : result.frames) {
    if (frame.type == FrameType::ack) {
      on_ack(frame.seq);
      continue;
    }
    if (frame.type == FrameType::ping) {
      continue;
    }
    if (frame.type == FrameType::bye) {
      got_bye_ = true;
      owner_.on_frame(self, std::move(frame));
      continue;
    }
    if (frame.type == FrameType::event) {
      inbound_bytes_ += frame.topic.size() + frame.payload.size();
    }
    owner_.on_frame(self, std::move(frame));
    std::lock_guard lock(mutex_);
    if (closed_) {
      return;
    }
  }
  owner_.on_read_batch_end(self);
  if (result.error) {
    DITASK_LOG(error, "mesh") << "closing connection with " << peer() << ": bad frame: " << *result.error;
    close_now("bad frame: " + *result.error);
    return;
  }
  read_more();
}

Link::Out Link::make_out(FrameType type, std::uint64_t sender, std::uint64_t seq, std::uint16_t flags,
                         BodyPtr body) const {
  FrameHeader h;
  h.type = type;
  h.flags = flags;
  h.sender = sender;
  h.seq = seq;
  h.topic_bytes = body ? body->topic.size() : 0;
  h.payload_bytes = body ? body->payload.size() : 0;
  return Out{encode_header(h), std::move(body), type, {}, 0};
}

void Link::schedule_write_locked(std::unique_lock<std::mutex>& lock) {
  if (write_active_ || closed_) {
    return;
  }
  write_active_ = true;
  lock.unlock();
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->write_batch(); });
}

void Link::send_control(FrameType type, BodyPtr body) {
  std::unique_lock lock(mutex_);
  if (closed_ || leaving_) {
    return;
  }
  auto out = make_out(type, 0, 0, 0, std::move(body));
  if (type == FrameType::bye) {
    leaving_ = true;
  }
  queue_.push_back(std::move(out));
  schedule_write_locked(lock);
}

SendResult Link::send_event(OutgoingEvent& event, std::uint64_t sender, std::uint16_t flags, bool drop_when_full,
                            Deadline& deadline) {
  const std::size_t size = event.size() + kHeaderSize;
  std::unique_lock lock(mutex_);
  auto fits = [&] { return closed_ || leaving_ || queued_bytes_ == 0 || queued_bytes_ + size <= queue_bytes_; };
  if (!fits()) {
    if (drop_when_full) {
      return SendResult::dropped;
    }
    ++waiters_;
    const bool room = changed_.wait_until(lock, deadline.at(), fits);
    --waiters_;
    if (!room) {
      return SendResult::timed_out;
    }
  }
  if (closed_ || leaving_) {
    return SendResult::closed;
  }
  queued_bytes_ += size;
  FrameHeader h;
  h.flags = flags;
  h.sender = sender;
  h.seq = ++next_seq_;
  h.topic_bytes = event.topic().size();
  h.payload_bytes = event.payload().size();
  if (event.payload().size() <= kStageBelow) {
    append_frame_locked(h, event, size);
  } else {
    queue_.push_back(Out{encode_header(h), event.body(), FrameType::event, {}, size});
  }
  schedule_write_locked(lock);
  return SendResult::queued;
}

void Link::append_frame_locked(const FrameHeader& header, const OutgoingEvent& event, std::size_t size) {
  if (queue_.empty() || queue_.back().frames.empty() || queue_.back().frames.size() >= kFramesChunk) {
    Out run;
    if (!spare_.empty()) {
      run.frames = std::move(spare_.back());
      spare_.pop_back();
    }
    queue_.push_back(std::move(run));
  }
  Out& run = queue_.back();
  const auto head = encode_header(header);
  const auto* topic = reinterpret_cast<const std::uint8_t*>(event.topic().data());
  run.frames.insert(run.frames.end(), head.begin(), head.end());
  run.frames.insert(run.frames.end(), topic, topic + event.topic().size());
  run.frames.insert(run.frames.end(), event.payload().begin(), event.payload().end());
  run.event_bytes += size;
}

void Link::send_events_unbounded(const std::vector<Pending>& events) {
  std::unique_lock lock(mutex_);
  if (closed_ || leaving_ || events.empty()) {
    return;
  }
  for (const auto& e : events) {
    const std::size_t size = e.body->size() + kHeaderSize;
    queued_bytes_ += size;
    queue_.push_back(make_out(FrameType::event, e.sender, ++next_seq_, e.flags, e.body));
    queue_.back().event_bytes = size;
  }
  schedule_write_locked(lock);
}

void Link::write_batch() {
  std::vector<asio::const_buffer> buffers;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || queue_.empty()) {
      write_active_ = false;
      return;
    }
    writing_.clear();
    std::size_t batch_bytes = 0;
    while (!queue_.empty() && writing_.size() < kMaxBatchFrames && batch_bytes < kMaxBatchBytes) {
      const Out& next = queue_.front();
      batch_bytes += next.frames.empty() ? kHeaderSize + (next.body ? next.body->size() : 0) : next.frames.size();
      writing_.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  // Small frames are copied into one staging buffer (one iovec for many events); large payloads
  // are written from their own buffers. Segments are recorded first: staging_ may still grow.
  struct Segment {
    bool staged;
    std::size_t offset;
    const std::uint8_t* data;
    std::size_t size;
  };
  std::vector<Segment> segments;
  staging_.clear();
  auto stage = [&](const std::uint8_t* data, std::size_t size) {
    if (!segments.empty() && segments.back().staged) {
      segments.back().size += size;
    } else {
      segments.push_back(Segment{true, staging_.size(), nullptr, size});
    }
    staging_.insert(staging_.end(), data, data + size);
  };
  for (const auto& out : writing_) {
    if (!out.frames.empty()) {  // already whole frames: written from where they are
      segments.push_back(Segment{false, 0, out.frames.data(), out.frames.size()});
      continue;
    }
    stage(out.header.data(), out.header.size());
    if (!out.body) {
      continue;
    }
    const auto* topic = reinterpret_cast<const std::uint8_t*>(out.body->topic.data());
    stage(topic, out.body->topic.size());
    if (out.body->payload.size() <= kStageBelow) {
      stage(out.body->payload.data(), out.body->payload.size());
    } else {
      segments.push_back(Segment{false, 0, out.body->payload.data(), out.body->payload.size()});
    }
  }
  buffers.reserve(segments.size());
  for (const auto& seg : segments) {
    buffers.emplace_back(seg.staged ? staging_.data() + seg.offset : seg.data, seg.size);
  }
  asio::async_write(socket_, buffers,
                    [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                      self->on_written(ec);
                    });
}

void Link::on_written(const boost::system::error_code& ec) {
  if (ec) {
    close_now(leave_close_reason_.empty() ? "connection lost: " + ec.message() : leave_close_reason_);
    return;
  }
  bool more = false;
  bool sent_bye = false;
  bool notify = false;
  {
    std::lock_guard lock(mutex_);
    for (auto& out : writing_) {
      queued_bytes_ -= out.event_bytes;
      sent_bye = sent_bye || out.type == FrameType::bye;
      if (!out.frames.empty() && spare_.size() < kSpareBuffers && out.frames.capacity() <= 2 * kFramesChunk) {
        out.frames.clear();
        spare_.push_back(std::move(out.frames));
      }
    }
    writing_.clear();
    more = !queue_.empty() && !closed_;
    if (!more) {
      write_active_ = false;
    }
    notify = waiters_ > 0;
  }
  if (notify) {
    changed_.notify_all();
  }
  if (sent_bye) {
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_send, ignored);
  }
  if (more) {
    write_batch();
  }
}

void Link::close(std::string reason) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), reason = std::move(reason)] {
    self->close_now(reason);
  });
}

void Link::leave(std::string reason, std::string close_reason, std::chrono::milliseconds linger,
                 bool permanent, std::string you) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), reason = std::move(reason),
                                      close_reason = std::move(close_reason), linger, permanent,
                                      you = std::move(you)]() mutable {
    {
      std::lock_guard lock(self->mutex_);
      if (self->closed_) {
        return;
      }
    }
    self->leave_close_reason_ = close_reason;
    self->send_control(FrameType::bye, std::make_shared<Body>(Body{"", encode_bye(reason, permanent, you)}));
    self->linger_timer_.expires_after(linger);
    self->linger_timer_.async_wait([self, close_reason](const boost::system::error_code& ec) {
      if (!ec) {
        self->close_now(close_reason);
      }
    });
    self->read_more();  // a paused reader must still see the peer's end of stream
  });
}

void Link::close_now(const std::string& reason) {
  std::uint64_t lost = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return;
    }
    closed_ = true;
    lost = next_seq_ - acked_seq_;
    queue_.clear();
    queued_bytes_ = 0;
  }
  changed_.notify_all();
  boost::system::error_code ignored;
  hello_timer_.cancel();
  linger_timer_.cancel();
  socket_.shutdown(Socket::shutdown_both, ignored);
  socket_.close(ignored);
  owner_.on_closed(shared_from_this(), reason, lost);
}

void Link::delivered(std::uint64_t seq, std::size_t bytes) noexcept {
  {
    std::lock_guard lock(delivered_mutex_);
    if (seq == delivered_seq_ + 1) {
      delivered_seq_ = seq;
      while (!delivered_ahead_.empty() && *delivered_ahead_.begin() == delivered_seq_ + 1) {
        delivered_seq_ = *delivered_ahead_.begin();
        delivered_ahead_.erase(delivered_ahead_.begin());
      }
    } else if (seq > delivered_seq_) {
      delivered_ahead_.insert(seq);
    }
  }
  const std::size_t before = inbound_bytes_.fetch_sub(bytes);
  const bool resume = read_paused_.load() && before - bytes <= inbound_limit_ / 2;
  if (!ack_scheduled_.exchange(true) || resume) {
    try {
      asio::post(socket_.get_executor(), [self = shared_from_this(), resume] {
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

void Link::send_ack() {
  ack_scheduled_ = false;
  std::uint64_t seq = 0;
  {
    std::lock_guard lock(delivered_mutex_);
    seq = delivered_seq_;
  }
  if (seq <= ack_sent_) {
    return;
  }
  ack_sent_ = seq;
  std::unique_lock lock(mutex_);
  if (closed_) {
    return;
  }
  // Acks overtake queued events: they only tell the peer what it may forget.
  auto out = make_out(FrameType::ack, 0, seq, 0, nullptr);
  queue_.push_front(std::move(out));
  schedule_write_locked(lock);
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

bool Link::wait_acked(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  ++waiters_;
  const bool done = changed_.wait_until(lock, deadline, [&] { return closed_ || acked_seq_ == next_seq_; });
  --waiters_;
  return done &&
         acked_seq_ == next_seq_;
}

}  // namespace ditask::detail::mesh
