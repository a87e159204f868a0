// SPDX-License-Identifier: MIT
// One mesh connection: a byte stream (TCP or Unix) carrying frames both ways.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "../remote_event.hpp"
#include "frame.hpp"
#include "handshake.hpp"
#include "hello.hpp"
#include "io_runner.hpp"
#include "link_limits.hpp"
#include "../transport/channel.hpp"
#include "../transport/inline_write.hpp"
#include "../transport/outgoing_event.hpp"
#include "read_buffer_pool.hpp"

namespace ditask::detail::mesh {

using Socket = boost::asio::generic::stream_protocol::socket;


/// One connection. Reads frames and hands them to its Owner, writes queued frames in as few
/// writes as possible. The send queue is bounded in bytes; event frames are numbered from 1 and
/// acknowledged by the peer, so what a lost connection took with it is counted exactly.
/// Acknowledgements ride on the frames written anyway; alone, they go at most kAckDelay after a
/// read, or at once while the peer waits for them (it sent a ping).
/// Thread: the io thread owns the socket's reading side, the timers and the Owner callbacks.
/// Writing belongs to whoever holds the write token: the io thread, or an emitting thread that
/// found the link idle and holds an inline-write grant (transport/inline_write.hpp); it writes
/// without the lock held. send_*, close and delivered() are called from any thread.
class Link final : public Receipt, public Channel, public HeldWrite, public std::enable_shared_from_this<Link> {
 public:
  /// Receives what a Link reads. Called on the io thread.
  class Owner {
   public:
    virtual ~Owner() = default;
    /// One complete frame (hello, auth, event, ...).
    virtual void on_frame(const std::shared_ptr<Link>& link, Frame&& frame) = 0;
    /// After the frames of one read; lets the owner hand events over in batches.
    virtual void on_read_batch_end(const std::shared_ptr<Link>& link) = 0;
    /// The link closed (once). `reason` is for people; `lost` events were never acknowledged.
    virtual void on_closed(const std::shared_ptr<Link>& link, const std::string& reason, std::uint64_t lost) = 0;
    /// The peer acknowledged `count` more events. Thread: io.
    virtual void on_acked(std::uint64_t count) = 0;
    /// A received event found no handler. Thread: the dispatcher.
    virtual void on_unhandled() = 0;
  };

  /// `peer` names the other side in log lines until its hello arrives. `dial_address`: the
  /// address this side dialled ("" when the peer dialled us).
  /// `own_nonce`: this link's token challenge (empty without a token).
  Link(Socket socket, std::string peer, std::string dial_address, std::string own_nonce, Owner& owner,
       std::size_t max_frame_bytes,
       std::size_t queue_bytes, std::chrono::milliseconds hello_timeout,
       std::shared_ptr<ReadBufferPool> read_buffers = nullptr);
  ~Link() override;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  /// The size of a link's first read buffer (what a ReadBufferPool for links must hand out).
  static std::size_t first_read_bytes() noexcept;

  /// Starts reading and the hello timer. Thread: io.
  void start();

  /// Queues a control frame (hello, auth, bye, ping); never waits, not counted against the bound.
  void send_control(FrameType type, BodyPtr body);
  /// Queues an event frame. When the queue is full: waits until `deadline` (wait policy), or
  /// returns dropped at once (`drop`); returns closed when the link is gone.
  /// `write_here`: the caller holds an inline-write grant; when the link is idle it writes the
  /// frame itself (no io-thread wake-up). A thread that holds its writes (hold_writes()) leaves an
  /// idle link's frame queued for its release, while the queue is at most half full.
  SendResult send_event(OutgoingEvent& event, std::uint64_t sender, std::uint16_t flags, bool drop_when_full,
                        Deadline& deadline, bool write_here) override;
  /// HeldWrite: writes the queue inline when the link is idle (the holding thread's release).
  void write_held() noexcept override;
  /// Channel: the peer's --max-frame-bytes (its hello's). Only for an established link.
  std::size_t max_event_bytes() const noexcept override { return handshake_.hello()->max_frame_bytes; }
  /// Channel: the link and what to do about a peer that reads slower than this node sends.
  Blocked blocked() const override;
  /// Channel: queues events regardless of the bound (moving the early queue of a peer onto its
  /// link). Returns 0: a mesh peer is sent every event (its receiver counts the unhandled).
  std::size_t send_held(const std::vector<HeldEvent>& events) override;

  /// Closes now (any thread). Owner::on_closed follows on the io thread.
  void close(std::string reason);
  /// Sends bye{reason}, stops writing, waits (at most `linger`) for the peer to close, then closes
  /// with `close_reason`. Any thread.
  /// `permanent` marks a refusal that retrying cannot change; `you` words a refusal for the peer.
  void leave(std::string reason, std::string close_reason, std::chrono::milliseconds linger,
             bool permanent = false, std::string you = {});
  /// leave(), done now: the bye is queued before anything read after it is handled (a refusal
  /// made while reading the peer's hello must go out even if the peer's own bye and end of
  /// stream are next in the same read). Thread: io thread.
  void leave_here(const std::string& reason, const std::string& close_reason, std::chrono::milliseconds linger,
                  bool permanent = false, const std::string& you = {});

  /// The receiver side of an event: its handlers ran (or it was dropped). Any thread.
  void delivered(std::uint64_t seq, std::size_t bytes) noexcept { delivered_run(seq, seq, bytes); }
  /// delivered() for the events numbered `first` to `last`, `bytes` in all. Any thread.
  void delivered_run(std::uint64_t first, std::uint64_t last, std::size_t bytes) noexcept;
  /// Receipt: delivered(), and counts an unhandled event.
  void done(std::uint64_t seq, std::size_t bytes, bool handled) noexcept override;
  /// Receipt: delivered_run().
  void done_run(std::uint64_t first, std::uint64_t last, std::size_t bytes) noexcept override {
    delivered_run(first, last, bytes);
  }
  /// The peer acknowledged every event up to `seq`. Thread: io.
  void on_ack(std::uint64_t seq);
  /// Asks the peer (a ping) to acknowledge what it handled at once, when anything is unacked.
  void request_ack();
  /// Events queued or written and not yet acknowledged.
  std::uint64_t unacked() const;
  /// Waits until everything queued was acknowledged, or until `deadline` (call request_ack()
  /// first, or the ack may wait for the peer's ack timer). Any thread but io.
  bool wait_acked(std::chrono::steady_clock::time_point deadline);

  /// The other side, for log lines: its address, then `node N (address)` after the hello.
  std::string peer() const override;
  /// True when this side dialled.
  bool dialled() const noexcept { return !dial_address_.empty(); }
  /// The address this side dialled ("" when the peer dialled us).
  const std::string& dial_address() const noexcept { return dial_address_; }

  /// The hello / auth / welcome exchange, driven by the owner. Thread: io.
  Handshake& handshake() noexcept { return handshake_; }
  /// The peer's hello once the handshake checked it. Thread: io.
  const std::optional<Hello>& hello() const noexcept { return handshake_.hello(); }
  /// The peer joined through this link. Thread: any (shutdown reads it).
  bool established() const noexcept { return established_.load(); }
  /// The peer joined: its events are sent by `sender`; the handshake is over. Thread: io.
  void establish(std::shared_ptr<const EventMeta> sender);
  /// The peer as its events' sender (set by establish(), then fixed). Thread: io, or under the
  /// owner's lock once joined.
  const std::shared_ptr<const EventMeta>& sender_meta() const noexcept { return sender_meta_; }
  /// Closes now, calling Owner::on_closed before returning. Thread: io.
  void close_here(const std::string& reason) { close_now(reason); }
  /// Cancels the hello timer. Thread: io.
  void stop_hello_timer();
  /// Names the peer in later log lines. Thread: io.
  void set_peer_name(std::string name);
  /// Who runs the io_context: told of every post from another thread (IoRunner::posted), so
  /// that a let-go io_context is taken back to run it. Before start().
  void set_io_runner(IoRunner* runner) noexcept { runner_ = runner; }

 private:
  // Posts `fn` to the io_context, and tells the runner (if any).
  template <typename Fn>
  void post_io(Fn&& fn) {
    boost::asio::post(socket_.get_executor(), std::forward<Fn>(fn));
    if (runner_ != nullptr) {
      runner_->posted();
    }
  }

  // One queued frame (header + shared body), or a run of small event frames copied whole
  // into `frames` (then `header` and `body` are unused).
  struct Out {
    std::array<std::uint8_t, kHeaderSize> header{};
    BodyPtr body;
    FrameType type = FrameType::event;
    std::vector<std::uint8_t> frames;
    std::size_t event_bytes = 0;  // counted against the queue bound
  };

  void read_more();
  // Reads into [into, into + size): Asio's read, or, when `drained` (the last read emptied the
  // socket), a wait for readiness and then one recv. Io thread.
  void start_read(std::uint8_t* into, std::size_t size, bool direct, bool drained);
  // `direct`: the bytes went into the decoder's payload tail, not the read buffer.
  void on_read(const boost::system::error_code& ec, std::size_t n, bool direct);
  void close_now(const std::string& reason);
  Out make_out(FrameType type, std::uint64_t sender, std::uint64_t seq, std::uint16_t flags, BodyPtr body) const;
  void append_frame_locked(const FrameHeader& header, const OutgoingEvent& event, std::size_t size);

  // Writing (connection_write.cpp). Whoever holds the token (write_active_) is the only writer.
  // Gives the token to the io thread unless someone holds it. Caller holds mutex_.
  void schedule_write_locked(std::unique_lock<std::mutex>& lock);
  // Moves the next batch into writing_, an ack in front when one is due; false when there is
  // nothing to write. Caller holds mutex_ and the token.
  bool take_batch_locked();
  // Lays writing_ out as buffers_ (small frames copied into staging_). Token holder, no lock.
  void build_buffers();
  // Takes the token and writes the queue from the calling thread with non-blocking sends; what
  // the socket does not take at once is handed to the io thread. Caller holds mutex_ (released).
  void write_inline(std::unique_lock<std::mutex>& lock);
  // Io thread, token: writes the next batch / the rest of buffers_ after `written` bytes.
  void write_batch();
  void write_rest(std::size_t written);
  void on_written(const boost::system::error_code& ec);
  // A batch went out whole: recycles its buffers. True when more is queued (the token is kept);
  // otherwise the token is given back. Token holder.
  bool finish_batch(bool& sent_bye);

  // Acknowledgements (connection_ack.cpp).
  // Queues an ack of what was handled, if it has not been sent. Io thread.
  void send_ack();
  // Arms the ack timer (once) after a read that brought events. Io thread.
  void arm_ack_timer();
  // Called with mutex_ held: an ack is due (handled events not acknowledged yet).
  bool ack_due_locked() const noexcept;

  Handshake handshake_;   // io thread
  std::atomic<bool> established_{false};
  std::shared_ptr<const EventMeta> sender_meta_;  // io thread, fixed once established
  const std::string dial_address_;
  Socket socket_;
  const int fd_;  // socket_'s descriptor, for inline writes; closed only after they ended
  Owner& owner_;
  IoRunner* runner_ = nullptr;  // fixed before start()
  boost::asio::steady_timer hello_timer_;
  boost::asio::steady_timer linger_timer_;
  boost::asio::steady_timer ack_timer_;
  FrameDecoder decoder_;
  DecodeResult decoded_;  // io thread: the frames of the last read
  std::shared_ptr<ReadBufferPool> read_pool_;
  std::uint8_t* pooled_read_ = nullptr;           // io thread: from read_pool_, or null
  std::unique_ptr<std::uint8_t[]> own_read_;      // io thread: when not pooled
  std::uint8_t* read_buffer_ = nullptr;           // io thread: one of the two
  std::size_t read_capacity_;                     // io thread
  const std::size_t queue_bytes_;
  const std::size_t inbound_limit_;

  // The sending side (emitting threads, the io thread's writes) and the receipts (dispatcher, RPC
  // threads) each start a cache line of their own, away from the io thread's reading fields.
  alignas(64) mutable std::mutex mutex_;  // guards the fields down to peer_name_
  std::condition_variable changed_;     // room in the queue, acks, close
  std::deque<Out> queue_;
  std::vector<Out> writing_;            // the batch being written (token holder)
  std::vector<std::uint8_t> staging_;   // small frames of that batch, copied (token holder)
  std::vector<boost::asio::const_buffer> buffers_;  // that batch as buffers (token holder)
  std::vector<std::vector<std::uint8_t>> spare_;  // emptied Out::frames buffers, reused
  bool streamed_ = false;  // guarded by mutex_: a run of frames filled up once (the link carries a stream)
  std::size_t queued_bytes_ = 0;        // queue_ + writing_ event bytes
  bool write_active_ = false;           // the write token: a write is posted or in progress
  bool deferred_ = false;               // its write waits for the next runner (IoRunner::defer_write)
  bool inline_writing_ = false;         // an emitting thread is writing (the socket stays open)
  bool close_pending_ = false;          // closed during an inline write: its writer closes the socket
  bool ack_wanted_ = false;             // an ack-only write was asked for while the token was taken
  bool bye_written_ = false;            // our bye went out: no frame (no ack) may follow it
  std::uint64_t ack_sent_ = 0;          // the last seq acknowledged in a written batch
  int waiters_ = 0;                     // threads waiting on changed_
  bool closed_ = false;
  bool leaving_ = false;                // bye queued: no more frames after it
  std::uint64_t next_seq_ = 0;          // last event seq assigned
  std::uint64_t acked_seq_ = 0;
  std::string peer_name_;

  // Inbound acknowledgements.
  alignas(64) std::mutex delivered_mutex_;
  std::atomic<std::uint64_t> delivered_seq_{0};  // contiguous watermark, written under delivered_mutex_
  std::set<std::uint64_t> delivered_ahead_;  // guarded by delivered_mutex_
  std::atomic<std::uint64_t> ack_sent_seen_{0};  // ack_sent_, for delivered() (no lock)
  std::atomic<bool> ack_scheduled_{false};
  std::atomic<bool> ack_eager_{false};  // the peer waits for acks (it sent a ping): ack at once
  bool ack_timer_armed_ = false;        // io thread
  std::uint64_t received_seq_ = 0;      // io thread: the last event seq read
  std::uint64_t ack_sent_at_tick_ = 0;  // io thread: ack_sent_ at the ack timer's last tick
  std::chrono::milliseconds ack_tick_ = link_limits::kAckDelay;  // io thread: the ack timer's next interval
  std::atomic<std::size_t> inbound_bytes_{0};
  std::atomic<bool> read_paused_{false};
  bool reading_ = false;                // io thread: a read is outstanding
  bool drained_ = false;                // io thread: the read being handled emptied the socket
  bool closed_here_ = false;            // io thread: closed_, read without the lock (close_now runs on io)
  bool got_bye_ = false;                // io thread
  std::string bye_reason_;              // io thread
  std::string leave_close_reason_;      // io thread
};

}  // namespace ditask::detail::mesh
