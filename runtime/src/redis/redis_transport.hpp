// SPDX-License-Identifier: MIT
// The Redis transport (--mq-type redis): every worker of a run subscribes to a channel of its
// own and to the run's control channel on one Redis, and publishes each event to the channel of
// each peer it goes to. Presence keys and hellos make readiness; per-receiver sequence numbers
// make losses counted, never silent. docs/redis.md.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "../transport/node_settings.hpp"
#include "../transport/channel.hpp"
#include "../transport/inbox.hpp"
#include "../transport/inbox_transport.hpp"
#include "../transport/peer_group.hpp"
#include "../transport/peer_table.hpp"
#include "../transport/transport.hpp"
#include "make_redis.hpp"
#include "redis_client.hpp"
#include "redis_frame.hpp"
#include "redis_presence.hpp"
#include "redis_settings.hpp"

namespace ditask::detail::redis {

/// One worker's Redis transport. Owns one io thread, which alone drives hiredis. Thread: every
/// public method is safe from any thread except the io thread.
class RedisTransport final : public InboxTransport, public std::enable_shared_from_this<RedisTransport> {
 public:
  /// `common`: the node and the limits (its id, labels, the job's other
  /// workers, send queue, timeouts); `server`: where Redis is.
  RedisTransport(NodeSettings common, RedisSettings server);
  ~RedisTransport() override;
  RedisTransport(const RedisTransport&) = delete;
  RedisTransport& operator=(const RedisTransport&) = delete;

  /// Starts the io thread and connects (failures are retried until wait_ready gives up).
  void start();

  std::string_view name() const noexcept override { return "redis"; }
  /// Blocks until Redis is reached and every expected peer said hello. Errors: ditask::Error
  /// for a refused login at once; after the startup timeout, naming Redis or each missing peer.
  void wait_ready() override;
  void send_packed(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload) override;
  std::vector<PeerInfo> peers() const override;
  /// Publishes what is queued, says bye to every peer, deletes the presence key and closes
  /// (bounded by a few seconds when Redis is gone). Idempotent.
  void shutdown(bool failed = false) noexcept override;
  /// Tells the peers (in order with this node's events) which events to send it.
  void set_interest(std::optional<std::set<std::string>> names) override;

 private:
  // A joined peer process's channel: frames each event in that process's numbering and queues it
  // for Redis (or keeps it while the peer is unconfirmed, after a reconnect). Its room is the
  // transport's bytes on their way to Redis and the peer's read window (or backlog).
  class PeerChannel final : public Channel {
   public:
    PeerChannel(RedisTransport& owner, std::int64_t node, std::uint64_t instance)
        : owner_(owner), node_(node), instance_(instance) {}
    std::string peer() const override { return "node " + std::to_string(node_); }
    /// This node's --max-frame-bytes is checked before routing; a peer's own is not known.
    std::size_t max_event_bytes() const noexcept override { return static_cast<std::size_t>(-1); }
    /// Queues it (post: the caller publishes, publish_here_or_post()). Thread: any but io.
    SendResult send_event(OutgoingEvent& event, std::uint64_t sender, std::uint16_t flags, bool drop_when_full,
                          Deadline& deadline, bool write_here) override;
    /// The reader that has not read what it was sent, or Redis when the queue to it is full.
    Blocked blocked() const override;
    /// Queues them in the peer's numbering, but those its task does not handle (returned). Caller holds mutex_.
    std::size_t send_held(const std::vector<HeldEvent>& events) override;

   private:
    RedisTransport& owner_;
    const std::int64_t node_;
    const std::uint64_t instance_;
  };
  // Per peer: the numbers of what this node sent it, and whether the peer is known to be
  // subscribed now (after a reconnect: not until its hello came again).
  struct Slot {
    std::uint64_t sent_seq = 0;
    bool confirmed = true;
    std::chrono::steady_clock::time_point unconfirmed_since{};
    std::deque<HeldEvent> backlog;  // while unconfirmed
    std::size_t backlog_bytes = 0;
    PeerInterest interest;  // the event names it handles, as the newest change seen says
    SendWindow window;  // published to it, not yet said read
    std::shared_ptr<PeerChannel> channel;  // the joined process's
  };
  struct PeerTraits {
    using Conn = std::uint64_t;  // the joined process's instance (0: none)
    using Held = HeldEvent;  // framed when it leaves (its sequence number is the peer's)
    using Slot = RedisTransport::Slot;
    using ChannelRef = std::shared_ptr<PeerChannel>;
    static ChannelRef channel(const auto& joined) { return joined.slot.channel; }
  };
  using Peers = PeerTable<PeerTraits>;
  using Group = PeerGroup<PeerTraits>;
  // One message on its way to Redis.
  struct Outgoing {
    enum class Kind { event, control, presence };  // an event frame; a notice to the run; SET of the presence key
    std::string channel;                           // the channel (the key for presence)
    std::vector<std::uint8_t> frame;
    Kind kind = Kind::event;
  };
  // What the task did with one sender process's events, told on whichever thread finishes
  // them (dispatcher, RPC): the highest number done, and the bytes since the last read notice.
  // Read by the io thread, which sends the notices (FrameKind::read).
  class StreamReceipt final : public Receipt {
   public:
    explicit StreamReceipt(std::weak_ptr<RedisTransport> owner) : owner_(std::move(owner)) {}
    void done(std::uint64_t seq, std::size_t bytes, bool handled) noexcept override;
    void done_run(std::uint64_t first, std::uint64_t last, std::size_t bytes) noexcept override;
    /// The highest number done so far.
    std::uint64_t done_up_to() const noexcept { return done_.load(std::memory_order_acquire); }

   private:
    void progress(std::uint64_t last, std::size_t bytes, bool handled) noexcept;
    std::weak_ptr<RedisTransport> owner_;
    std::atomic<std::uint64_t> done_{0};
    std::atomic<std::size_t> bytes_{0};
  };
  // What this node knows of a sender process's numbers (its stream to this process).
  struct Incoming {
    std::uint64_t instance = 0;
    SequenceCheck check;
    std::shared_ptr<const EventMeta> meta;  // null until its hello (or the scan) told who it is
    std::vector<RemoteEvent> early;         // its events until then
    std::shared_ptr<StreamReceipt> receipt;  // told what the task did with them
    std::uint64_t delivered = 0;  // the highest number handed on to the task (or kept in `early`)
    std::uint64_t reported = 0;   // the number of the last read notice sent
  };
  enum class Link { down, connecting, up, closing };

  // ---- io thread: the connection (redis_transport.cpp) ----
  void connect();
  void on_client_up();
  void on_client_down(const std::string& why);
  // AUTH (when a password is set), then SELECT or PING on the command client, the two
  // SUBSCRIBEs on the other.
  void login(RedisClient& client, bool commands);
  void subscribed_one();
  // SET the presence key and PUBLISH the hello; the link is up once Redis has it.
  void announce();
  void link_up();
  void retry_later();
  // Every second: refresh the presence key, check each peer still listens.
  void tick();
  void fail_permanently(const std::string& message, const std::string& hint);
  void say_goodbye(bool failed);
  bool reached_once_now() const;
  // ---- io thread: peers and events (redis_route.cpp sends, redis_receive.cpp receives) ----
  void on_control(const redisReply* reply);
  void on_message(const redisReply* reply);
  // A fresh stream from process `instance` of node `sender`.
  Incoming new_stream(std::uint64_t instance);
  // Tells each sender whose stream moved on what of it this node's task is done with (handled,
  // or counted as lost): a read notice (FrameKind::read).
  void send_notices();
  // Has the io thread send the read notices: at once (`now`), or within kNoticeDelay. Any thread.
  void notices_soon(bool now);
  // A receiver's FrameKind::read: its window opens.
  void on_read_notice(const FrameView& frame);
  // A hello (or an interest notice) as text; `answer`: it was heard on the control channel, so
  // this node answers it with its own hello on the sender's channel (an answer is not answered).
  void on_hello_text(std::string_view text, bool answer);
  // A hello; its interest counts unless a newer one of the same process came first.
  void on_hello(const PeerRecord& peer, PeerInterest interest, bool answer);
  // Queues this node's hello for `peer`'s process, on its channel. Caller holds mutex_.
  void queue_answer_locked(const PeerRecord& peer);
  // A peer's new interest (set_interest on its side), unless a newer one came first.
  void on_interest(std::int64_t node, std::uint64_t instance, PeerInterest interest);
  void leave(std::int64_t node, std::uint64_t instance, const std::string& reason);
  void deliver(Incoming& in, const FrameView& frame, std::size_t bytes);
  void release_early_events();
  void hand_over_batch();
  // Queues what waited for `node` (its process `to`) while it was unconfirmed. Caller holds mutex_.
  void flush_backlog_locked(std::int64_t node, std::uint64_t to, Slot& slot);
  void flush();
  void publish_outbox();
  // publish_outbox() with the client's writes held, so the whole outbox goes out in one write
  // from this thread. Caller holds pub_guard_; the link is up.
  void publish_outbox_at_once();
  // `counted`: its bytes are in bytes_in_flight_ (a bye's are not).
  void publish_now(Outgoing&& out, bool counted);
  // A PUBLISH (or SET) answered: its bytes are no longer in flight.
  static void on_published(redisAsyncContext* ctx, void* reply, void* privdata);
  // True the first time `what` is asked about (the engine's LogOnce).
  bool first_time(const std::string& what);
  // Room for `bytes` more on the way to Redis. Caller holds mutex_.
  bool queue_room_locked(std::size_t bytes) const {
    return bytes_in_flight_ == 0 || bytes_in_flight_ + bytes <= settings_.send_queue_bytes;
  }
  // Room for `bytes` more to `slot`'s reader: its read window, or its backlog while unconfirmed.
  bool reader_room(const Slot& slot, std::size_t bytes) const {
    return slot.confirmed ? slot.window.has_room(bytes, kReadWindowBytes)
                          : slot.backlog.empty() || slot.backlog_bytes + bytes <= settings_.send_queue_bytes;
  }
  // ---- any thread ----
  // Frames `held` for `node`'s process `to` (numbered in its stream) and queues it for the io
  // thread (`post`: and wakes it to publish). Not counted (the caller counts it sent once). Caller holds mutex_.
  void queue_locked(std::int64_t node, std::uint64_t to, Slot& slot, const HeldEvent& held, bool post = true);
  // Queues a frame that is not an event (a notice, a key), counted in bytes_in_flight_. Caller holds mutex_.
  void queue_control_locked(Outgoing&& out);
  // Publishes what is queued on the calling thread when nobody else uses the command client;
  // else has the io thread do it.
  void publish_here_or_post();
  void post_flush_locked();
  std::string channel_of(std::int64_t node) const { return server_.scope + ":n:" + std::to_string(node); }
  std::string presence_key(std::int64_t node) const { return server_.scope + ":p:" + std::to_string(node); }
  // This node's hello (with its interest). Caller holds mutex_.
  std::string hello_text_locked() const;
  /// --world-size when this node is in a job of several launchers, else 0 (its hello carries it).
  std::int64_t own_world_size() const noexcept {
    const auto local = static_cast<std::int64_t>(settings_.local_nodes.size());
    return settings_.world_size && *settings_.world_size > local ? *settings_.world_size : 0;
  }
  std::string hello_text() const;

  const NodeSettings settings_;
  const RedisSettings server_;
  const std::uint64_t instance_;
  const std::string own_channel_;
  const std::string control_channel_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  // Held by whoever uses pub_: the io thread, or an emitting thread that publishes itself.
  // Lock order: pub_guard_, then mutex_.
  std::recursive_mutex pub_guard_;
  std::unique_ptr<RedisClient> pub_;  // commands (guarded by pub_guard_)
  std::unique_ptr<RedisClient> sub_;  // subscriptions (io thread)
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer tick_timer_;
  std::chrono::milliseconds backoff_{0};  // io thread
  std::uint64_t generation_ = 0;          // io thread: one per connection attempt; older reports are stale
  int clients_up_ = 0;                    // io thread
  bool pub_ready_ = false;                // io thread: logged in (and SELECTed)
  bool announced_ = false;                // io thread: this node's hello reached Redis since the last connect
  int subscriptions_confirmed_ = 0;       // io thread
  bool lost_logged_ = false;              // io thread: this outage was reported
  std::map<std::int64_t, Incoming> incoming_;  // io thread: by sender node
  // Interest notices of peers not joined yet (node -> its instance, what it handles). mutex_.
  std::map<std::int64_t, std::pair<std::uint64_t, PeerInterest>> early_interest_;
  std::vector<RemoteEvent> batch_;             // io thread: what one read brought
  boost::asio::steady_timer notice_timer_;     // io thread: the read notices within kNoticeDelay
  std::atomic<bool> notice_armed_{false};      // the timer is set (or about to be)

  mutable std::mutex mutex_;  // guards the fields down to bytes_in_flight_
  std::condition_variable changed_;  // ready, a permanent failure, room in the send queue, closed
  Group group_;   // the engine: the peer table and the policy above the channels
  Peers& peers_;  // group_.table()
  Link link_ = Link::down;
  bool reached_once_ = false;     // Redis answered at least once
  std::string last_error_;        // why Redis cannot be reached now
  std::string permanent_error_;   // a refusal retrying cannot change (wrong password)
  std::string permanent_hint_;
  std::vector<Outgoing> outbox_;  // for the io thread to publish
  bool flush_posted_ = false;
  std::size_t bytes_in_flight_ = 0;  // queued or published without a reply yet
  bool shutting_down_ = false;
  bool closed_ = false;
  PeerInterest interest_;  // this node's task's, numbered by change (names nullopt: all)

};

}  // namespace ditask::detail::redis
