// SPDX-License-Identifier: MIT
#include "connection.hpp"

#include <sys/socket.h>

#include <cerrno>

#include "link_limits.hpp"

#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "ditask/runtime/log.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using namespace link_limits;

namespace {
// The read buffer starts small (heap memory, no mmap/munmap per connection: a job of N workers
// has N*(N-1) of them) and grows while reads fill it (a stream of events).
constexpr std::size_t kFirstReadChunk = 16 * 1024;
constexpr std::size_t kMaxReadChunk = 256 * 1024;
// A payload with at least this much still to come is read into its own buffer directly, when it
// is no larger than kDirectReadUpTo (a larger one grows as its bytes arrive: a lying header
// cannot make us allocate more than this at once).
constexpr std::size_t kDirectReadFrom = 64 * 1024;
constexpr std::size_t kDirectReadUpTo = 16u << 20;
// Event payloads up to this size that arrive whole share one buffer per read (FrameDecoder).
constexpr std::size_t kSharePayloadsUpTo = 4 * 1024;
}  // namespace

Link::Link(Socket socket, std::string peer, std::string dial_address, std::string own_nonce, Owner& owner,
           std::size_t max_frame_bytes, std::size_t queue_bytes, std::chrono::milliseconds hello_timeout,
           std::shared_ptr<ReadBufferPool> read_buffers)
    : handshake_(!dial_address.empty(), std::move(own_nonce)),
      dial_address_(std::move(dial_address)),
      socket_(std::move(socket)),
      fd_(socket_.native_handle()),
      owner_(owner),
      hello_timer_(socket_.get_executor()),
      linger_timer_(socket_.get_executor()),
      ack_timer_(socket_.get_executor()),
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
  decoder_.share_small_payloads(kSharePayloadsUpTo);
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

Blocked Link::blocked() const {
  return {peer(),
          "the peer handles events slower than they are emitted; raise --send-queue-bytes or --send-timeout, or "
          "use --send-policy drop"};
}

void Link::set_peer_name(std::string name) {
  std::lock_guard lock(mutex_);
  peer_name_ = std::move(name);
}

void Link::start() {
  auto self = shared_from_this();
  hello_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (!ec && !self->established() && !self->handshake_.refused()) {
      DITASK_LOG(warn, "mesh") << "closing connection with " << self->peer()
                               << ": no hello within the hello timeout";
      self->close_now("no hello");
    }
  });
  read_more();
}

void Link::stop_hello_timer() { hello_timer_.cancel(); }

void Link::establish(std::shared_ptr<const EventMeta> sender) {
  sender_meta_ = std::move(sender);
  handshake_.mark_established();
  established_ = true;
  hello_timer_.cancel();
}

void Link::read_more() {
  // True only straight after a short read, in that read's handler: see start_read().
  const bool drained = std::exchange(drained_, false);
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
  // The rest of a large payload is read where it belongs, not copied out of the read buffer.
  if (auto tail = decoder_.payload_tail(kDirectReadFrom, kDirectReadUpTo); !tail.empty()) {
    start_read(tail.data(), tail.size(), true, drained);
    return;
  }
  start_read(read_buffer_, read_capacity_, false, drained);
}

void Link::start_read(std::uint8_t* into, std::size_t size, bool direct, bool drained) {
  if (!drained) {  // there may be bytes already: Asio tries the read at once
    socket_.async_read_some(asio::buffer(into, size),
                            [self = shared_from_this(), size, direct](const boost::system::error_code& ec,
                                                                      std::size_t n) {
                              self->drained_ = !ec && n < size;
                              self->on_read(ec, n, direct);
                            });
    return;
  }
  // The last read took less than it could: the socket was empty then. Asio's read would try at
  // once all the same and find nothing (a failing recv); a wait is queued without a try, but
  // Asio re-arms the descriptor for it (an epoll_ctl): one system call either way (strace).
  // Its readiness comes with the next bytes: the reactor's edge-triggered epoll reports any that
  // came after that read, on this thread, which queued the wait before it polls again.
  socket_.async_wait(Socket::wait_read, [self = shared_from_this(), into, size, direct](
                                            const boost::system::error_code& ec) {
    if (ec) {
      self->on_read(ec, 0, direct);
      return;
    }
    ssize_t n = 0;
    do {
      n = ::recv(self->fd_, into, size, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // readiness without bytes: wait again
      self->start_read(into, size, direct, true);
      return;
    }
    if (n <= 0) {
      self->on_read(n == 0 ? boost::system::error_code(asio::error::eof)
                           : boost::system::error_code(errno, boost::system::system_category()),
                    0, direct);
      return;
    }
    self->drained_ = static_cast<std::size_t>(n) < size;
    self->on_read({}, static_cast<std::size_t>(n), direct);
  });
}

void Link::on_read(const boost::system::error_code& ec, std::size_t n, bool direct) {
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
  DecodeResult& result = decoded_;  // kept: its capacity is reused by the next read
  if (direct) {
    decoder_.filled(n, result);
  } else {
    decoder_.feed(std::span<const std::uint8_t>(read_buffer_, n), result);
  }
  if (!direct && n == read_capacity_ && read_capacity_ < kMaxReadChunk) {
    read_capacity_ *= 4;
    own_read_.reset(new std::uint8_t[read_capacity_]);
    read_buffer_ = own_read_.get();
    if (pooled_read_ != nullptr) {
      read_pool_->give_back(std::exchange(pooled_read_, nullptr));
    }
  }
  auto self = shared_from_this();
  bool events = false;
  for (auto& frame : result.frames) {
    if (frame.type == FrameType::ack) {
      on_ack(frame.seq);
      continue;
    }
    if (frame.type == FrameType::ping) {  // the peer waits for our acks (it is leaving)
      ack_eager_ = true;
      send_ack();
      continue;
    }
    if (frame.type == FrameType::bye) {
      got_bye_ = true;
      owner_.on_frame(self, std::move(frame));
      continue;
    }
    if (frame.type == FrameType::event) {
      inbound_bytes_ += frame.topic.size() + frame.body().size();
      received_seq_ = frame.seq;
      events = true;
    }
    owner_.on_frame(self, std::move(frame));
    if (closed_here_) {  // the frame made the owner close this link
      return;
    }
  }
  // The next read starts before the batch is handed over. After a short read it is a wait with
  // no attempt (start_read()); after a full one, Asio's first attempt is over before the
  // dispatcher, woken by the hand-over, writes its reply on this socket, so that reply does not
  // meet the attempt on the socket's lock (a context switch each time). A read that completes at
  // once is posted, not run here.
  if (!result.error) {
    read_more();
  }
  owner_.on_read_batch_end(self);
  if (events) {
    arm_ack_timer();
  }
  if (result.error) {
    DITASK_LOG(error, "mesh") << "closing connection with " << peer() << ": bad frame: " << *result.error;
    close_now("bad frame: " + *result.error);
  }
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
                            Deadline& deadline, bool write_here) {
  const std::size_t size = event.size() + kHeaderSize;
  std::unique_lock lock(mutex_);
  auto fits = [&] { return closed_ || leaving_ || queued_bytes_ == 0 || queued_bytes_ + size <= queue_bytes_; };
  if (!fits() && !running_on_arrival()) {  // on arrival: only this thread would make room
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
  if (write_here && !write_active_) {
    write_inline(lock);
  } else if (!write_active_ && holding_writes() && queued_bytes_ <= queue_bytes_ / 2) {
    // Written at the holder's release; half the bound keeps room, so no sender waits on a
    // queue that only the holder would write.
    lock.unlock();
    add_held_write(shared_from_this());
  } else {
    schedule_write_locked(lock);
  }
  return SendResult::queued;
}

void Link::write_held() noexcept {
  std::unique_lock lock(mutex_);
  deferred_ = false;
  if (write_active_ || closed_ || queue_.empty()) {
    return;  // a write under way takes the queue along, or nothing is left
  }
  write_inline(lock);
}

void Link::append_frame_locked(const FrameHeader& header, const OutgoingEvent& event, std::size_t size) {
  if (queue_.empty() || queue_.back().frames.empty() || queue_.back().frames.size() >= kFramesChunk) {
    streamed_ = streamed_ || (!queue_.empty() && queue_.back().frames.size() >= kFramesChunk);
    Out run;
    if (!spare_.empty()) {
      run.frames = std::move(spare_.back());
      spare_.pop_back();
    } else if (streamed_) {
      // A link that carried a stream (it filled a run before): the run's whole size at once, not
      // grown by copies. Others (the many links of a large job) start small.
      run.frames.reserve(kFramesChunk + size);
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

std::size_t Link::send_held(const std::vector<HeldEvent>& events) {
  std::unique_lock lock(mutex_);
  if (closed_ || leaving_ || events.empty()) {
    return 0;
  }
  for (const auto& e : events) {
    const std::size_t size = e.body->size() + kHeaderSize;
    queued_bytes_ += size;
    queue_.push_back(make_out(FrameType::event, e.sender, ++next_seq_, e.flags, e.body));
    queue_.back().event_bytes = size;
  }
  schedule_write_locked(lock);
  return 0;
}

void Link::close(std::string reason) {
  post_io([self = shared_from_this(), reason = std::move(reason)] {
    self->close_now(reason);
  });
}

void Link::leave(std::string reason, std::string close_reason, std::chrono::milliseconds linger,
                 bool permanent, std::string you) {
  post_io([self = shared_from_this(), reason = std::move(reason),
           close_reason = std::move(close_reason), linger, permanent, you = std::move(you)] {
    self->leave_here(reason, close_reason, linger, permanent, you);
    self->read_more();  // a paused reader must still see the peer's end of stream
  });
}

void Link::leave_here(const std::string& reason, const std::string& close_reason, std::chrono::milliseconds linger,
                      bool permanent, const std::string& you) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return;
    }
  }
  leave_close_reason_ = close_reason;
  send_control(FrameType::bye, std::make_shared<Body>(Body{"", encode_bye(reason, permanent, you)}));
  linger_timer_.expires_after(linger);
  linger_timer_.async_wait([self = shared_from_this(), close_reason](const boost::system::error_code& ec) {
    if (!ec) {
      self->close_now(close_reason);
    }
  });
}

void Link::close_now(const std::string& reason) {
  std::uint64_t lost = 0;
  bool close_socket = true;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return;
    }
    closed_ = true;
    closed_here_ = true;
    lost = next_seq_ - acked_seq_;
    queue_.clear();
    queued_bytes_ = 0;
    if (inline_writing_) {  // its descriptor is in use: the inline writer closes it
      close_pending_ = true;
      close_socket = false;
    }
  }
  changed_.notify_all();
  boost::system::error_code ignored;
  hello_timer_.cancel();
  linger_timer_.cancel();
  ack_timer_.cancel();
  socket_.shutdown(Socket::shutdown_both, ignored);
  if (close_socket) {
    socket_.close(ignored);
  }
  owner_.on_closed(shared_from_this(), reason, lost);
}

}  // namespace ditask::detail::mesh
