// SPDX-License-Identifier: MIT
// A Link's writing side: the write token, batches, inline writes from an emitting thread and
// asynchronous writes on the io thread.
#include "connection.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "link_limits.hpp"

namespace ditask::detail::mesh {

namespace asio = boost::asio;
using namespace link_limits;

void Link::schedule_write_locked(std::unique_lock<std::mutex>& lock) {
  if (write_active_ || closed_) {
    return;
  }
  // A caller between two of its waits: its sends go out in one inline write when a thread next
  // takes the io context (its own next wait, or the io thread's), not through a posted handler.
  // (The runner's lock is taken under the link's: the runner never takes a link's under its own.)
  if (runner_ != nullptr && runner_->defers_here()) {
    if (deferred_) {
      return;  // already waiting for that write
    }
    if (runner_->defer_write(shared_from_this())) {
      deferred_ = true;  // cleared by write_held(), which takes this lock first
      return;
    }
    // A thread runs the io context now: posted as usual.
  }
  write_active_ = true;
  lock.unlock();
  post_io([self = shared_from_this()] { self->write_batch(); });
}

bool Link::take_batch_locked() {
  writing_.clear();
  ack_wanted_ = false;
  if (!bye_written_ && ack_due_locked()) {  // acks overtake queued events: they only tell the peer what it may forget
    ack_sent_ = delivered_seq_.load();
    ack_sent_seen_ = ack_sent_;
    writing_.push_back(make_out(FrameType::ack, 0, ack_sent_, 0, nullptr));
  }
  std::size_t batch_bytes = 0;
  while (!queue_.empty() && writing_.size() < kMaxBatchFrames && batch_bytes < kMaxBatchBytes) {
    const Out& next = queue_.front();
    batch_bytes += next.frames.empty() ? kHeaderSize + (next.body ? next.body->size() : 0) : next.frames.size();
    writing_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return !writing_.empty();
}

void Link::build_buffers() {
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
  buffers_.clear();
  buffers_.reserve(segments.size());
  for (const auto& seg : segments) {
    buffers_.emplace_back(seg.staged ? staging_.data() + seg.offset : seg.data, seg.size);
  }
}

void Link::write_batch() {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || !take_batch_locked()) {
      write_active_ = false;
      return;
    }
  }
  build_buffers();
  asio::async_write(socket_, buffers_,
                    [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                      self->on_written(ec);
                    });
}

void Link::write_inline(std::unique_lock<std::mutex>& lock) {
  write_active_ = true;
  inline_writing_ = true;
  take_batch_locked();
  lock.unlock();
  build_buffers();
  // Non-blocking sends from this thread; whatever the socket does not take now is the io
  // thread's to write (it waits for the socket to drain).
  std::size_t written = 0;
  int error = 0;
  std::size_t first = 0;  // buffers_[first] is the first not written whole
  std::size_t skip = 0;   // bytes of it already written
  while (first < buffers_.size()) {
    iovec iov[kInlineIovecs];
    std::size_t count = 0;
    std::size_t want = 0;
    for (std::size_t i = first; i < buffers_.size() && count < kInlineIovecs; ++i, ++count) {
      const std::size_t off = i == first ? skip : 0;
      iov[count].iov_base = const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(buffers_[i].data()) + off);
      iov[count].iov_len = buffers_[i].size() - off;
      want += iov[count].iov_len;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        error = errno;
      }
      break;
    }
    written += static_cast<std::size_t>(n);
    for (std::size_t left = static_cast<std::size_t>(n); left > 0;) {
      const std::size_t rest = buffers_[first].size() - skip;
      if (left < rest) {
        skip += left;
        break;
      }
      left -= rest;
      ++first;
      skip = 0;
    }
    if (static_cast<std::size_t>(n) < want) {
      break;  // the socket's buffer is full
    }
  }
  bool closed_meanwhile = false;
  {
    std::lock_guard relock(mutex_);
    inline_writing_ = false;
    closed_meanwhile = close_pending_;
  }
  auto self = shared_from_this();
  if (closed_meanwhile) {  // close_now left the descriptor to us
    post_io([self] {
      boost::system::error_code ignored;
      self->socket_.close(ignored);
    });
    return;
  }
  if (error != 0) {
    post_io([self, error] {
      self->on_written(boost::system::error_code(error, boost::system::system_category()));
    });
    return;
  }
  if (first < buffers_.size()) {
    post_io([self, written] { self->write_rest(written); });
    return;
  }
  bool sent_bye = false;
  if (finish_batch(sent_bye) || sent_bye) {
    // More was queued meanwhile (or, never from an emit, a bye): the io thread goes on.
    post_io([self, sent_bye] {
      if (sent_bye) {
        boost::system::error_code ignored;
        self->socket_.shutdown(Socket::shutdown_send, ignored);
      }
      self->write_batch();
    });
  }
}

void Link::write_rest(std::size_t written) {
  std::size_t first = 0;
  while (first < buffers_.size() && written >= buffers_[first].size()) {
    written -= buffers_[first].size();
    ++first;
  }
  buffers_.erase(buffers_.begin(), buffers_.begin() + static_cast<std::ptrdiff_t>(first));
  if (!buffers_.empty()) {
    buffers_.front() += written;
  }
  asio::async_write(socket_, buffers_,
                    [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                      self->on_written(ec);
                    });
}

void Link::on_written(const boost::system::error_code& ec) {
  if (ec) {
    close_now(leave_close_reason_.empty() ? "connection lost: " + ec.message() : leave_close_reason_);
    return;
  }
  bool sent_bye = false;
  const bool more = finish_batch(sent_bye);
  if (sent_bye) {
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_send, ignored);
  }
  if (more) {
    write_batch();
  }
}

bool Link::finish_batch(bool& sent_bye) {
  bool more = false;
  bool notify = false;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {  // close_now emptied the queue and its count
      writing_.clear();
      write_active_ = false;
      return false;
    }
    for (auto& out : writing_) {
      queued_bytes_ -= out.event_bytes;
      sent_bye = sent_bye || out.type == FrameType::bye;
      bye_written_ = bye_written_ || out.type == FrameType::bye;
      if (!out.frames.empty() && spare_.size() < kSpareBuffers && out.frames.capacity() <= 2 * kFramesChunk) {
        out.frames.clear();
        spare_.push_back(std::move(out.frames));
      }
    }
    writing_.clear();
    more = !queue_.empty() || ack_wanted_;
    if (!more) {
      write_active_ = false;
    }
    notify = waiters_ > 0;
  }
  if (notify) {
    changed_.notify_all();
  }
  return more;
}

}  // namespace ditask::detail::mesh
