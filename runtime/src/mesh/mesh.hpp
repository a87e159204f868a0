// SPDX-License-Identifier: MIT
// The mesh of one worker: its listening socket, the links to its peers, readiness, sending and
// receiving task events. docs/mesh.md "Who connects to whom", "Wire format"; docs/design.md "Threading in a worker".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/container/small_vector.hpp>

#include "../remote_event.hpp"
#include "address.hpp"
#include "connection.hpp"
#include "io_runner.hpp"
#include "listener.hpp"
#include "refusal.hpp"
#include "relay_plan.hpp"
#include "ditask/router.hpp"
#include "settings.hpp"
#include "../transport/inbox.hpp"
#include "../transport/peer_group.hpp"
#include "../transport/peer_table.hpp"
#include "../transport/transport.hpp"

namespace ditask::detail::mesh {

using detail::SendTarget;
using detail::Sink;

/// One worker's mesh: the Transport of TCP and Unix-socket links. Owns one io thread. Thread:
/// every public method is safe from any thread except the io thread.
class Mesh final : public Transport, public Link::Owner {
 public:
  explicit Mesh(MeshSettings settings);
  ~Mesh() override;
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  /// Adopts (or binds) the listening socket, starts the io thread, accepts and dials.
  /// Errors: ditask::Error naming the address.
  void start();
  /// Flushes to the sink what arrived before and hands it everything from now on.
  void attach(Sink sink) override;
  /// No sink any more: later events are acknowledged and counted as unhandled.
  void detach() override;
  /// Blocks until every expected peer completed the hello.
  /// Errors: ditask::Error naming each missing peer (and why) after the startup timeout.
  void wait_ready() override;
  /// Sends one event. Errors: ditask::Error when it exceeds a peer's frame limit (nothing is
  /// sent then), when a send queue stays full for the send timeout, or for an unknown node.
  void send(const SendTarget& target, std::string_view event, const EventArgs& args) override;
  /// send() for arguments already encoded as an event payload (detail::pack_event).
  void send_packed(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload) override;
  /// send_packed() that moves the payload into the frame body the links share.
  void send_owned(const SendTarget& target, std::string_view event, std::vector<std::uint8_t>&& payload) override;
  /// Connected peers, by node id.
  std::vector<PeerInfo> peers() const override;
  /// Counters.
  TransportStats stats() const override;
  /// stats(), and from now on a peer that leaves is neither counted lost nor warned about.
  TransportStats final_stats() override;
  /// A thread waiting for a call's answer runs io_ itself when no other thread does (IoRunner).
  std::optional<bool> wait_running_io(const std::function<bool()>& done, WakeWord& word,
                                      std::atomic<bool>& would_run,
                                      std::chrono::steady_clock::time_point deadline, bool runs_jobs) override {
    return runner_.wait_running_io(done, word, would_run, deadline,
                                   runs_jobs ? IoRunner::Then::runs_jobs : IoRunner::Then::waits_again);
  }
  /// The io thread lets io_ go after the current handler (it woke such a waiter).
  void offer_io() noexcept override { runner_.offer(); }
  /// The io thread takes io_ back now if no thread runs it.
  void want_io() noexcept override { runner_.want(); }
  /// "mesh".
  std::string_view name() const noexcept override { return "mesh"; }
  /// Waits (bounded) for what was sent to be acknowledged, says bye, closes every link and
  /// stops the io thread. Idempotent.
  /// `failed`: the bye says "failed", so peers that dial this node keep dialling (it may be
  /// restarted); after a plain bye they do not.
  void shutdown(bool failed = false) noexcept override;

  // Link::Owner (io thread)
  void on_frame(const std::shared_ptr<Link>& link, Frame&& frame) override;
  void on_read_batch_end(const std::shared_ptr<Link>& link) override;
  void on_closed(const std::shared_ptr<Link>& link, const std::string& reason, std::uint64_t lost) override;
  void on_acked(std::uint64_t count) override;
  void on_unhandled() override;

 private:
  /// How this node reaches an expected peer: by dialling it (with backoff), or not at all (it dials us).
  struct DialSlot {
    bool dial = false;                   ///< this node dials it (at the Expected's address)
    std::string last_error;              ///< why the last dial failed
    std::chrono::milliseconds backoff{0};
    std::shared_ptr<boost::asio::steady_timer> timer;
  };
  struct PeerTraits {
    using Conn = std::shared_ptr<Link>;
    using Held = HeldEvent;
    using Slot = DialSlot;
    using ChannelRef = std::shared_ptr<Link>;  // a link is a peer's channel
    static ChannelRef channel(const auto& joined) { return joined.conn; }
  };
  using Peers = PeerTable<PeerTraits>;
  using Group = PeerGroup<PeerTraits>;
  /// A peer we send to: expected (dialled or dialling us) or joined.
  using Dest = Peers::Expected;

  /// What an emit needs to route without the mesh's lock: the joined peers. Immutable; the io
  /// thread publishes a new one (publish_routes_locked) whenever a peer joins or leaves.
  struct Routes {
    struct Peer {
      std::int64_t node = 0;
      std::shared_ptr<Link> link;
      std::set<std::string> labels;
    };
    std::vector<Peer> peers;     ///< by node id
    bool early_pending = false;  ///< an expected peer never joined: its events wait (the locked path)
  };

  void dial(std::size_t dest_index);
  void dial_failed(std::size_t dest_index, const std::string& why);
  // `dial_address`: what this node dialled ("" for an accepted connection).
  void start_link(Socket socket, std::string peer, std::string dial_address, bool tcp);
  void on_hello(const std::shared_ptr<Link>& link, const Frame& frame);
  void on_auth(const std::shared_ptr<Link>& link, const Frame& frame);
  // Does what the link's handshake answered.
  void follow(const std::shared_ptr<Link>& link, const Handshake::Answer& answer);
  // Refuses `link`'s peer (node id `node` when its hello named one) and closes it after a bye.
  void refuse(const std::shared_ptr<Link>& link, const Refusal& why, std::optional<std::int64_t> node = std::nullopt);
  // Our checks passed: says welcome (or refuses a second process with the same node id); the link
  // is established once the peer's welcome is here too.
  void accept(const std::shared_ptr<Link>& link);
  void establish(const std::shared_ptr<Link>& link);
  void on_event(const std::shared_ptr<Link>& link, Frame&& frame);
  void relay(const std::shared_ptr<Link>& from, const BodyPtr& body, std::uint64_t sender);
  // Hub: queues a relayed copy on the joined link `to` (counted sent, lost if it just closed, or
  // dropped when its queue is full or the event too large for it). Thread: io.
  void forward_relayed(const std::shared_ptr<Link>& to, const BodyPtr& body, std::uint64_t sender);
  // Counts one event the relay dropped; logs the first and every 1000th.
  void relay_dropped(const std::string& whom, const char* why);
  void hand_over(std::vector<RemoteEvent>&& events);
  // A spoke's emit_to_node for another spoke of a relaying star: the hub to send it through, or
  // nullopt (not relayed: a direct peer, no relay, or a node outside this launcher's job).
  std::optional<std::int64_t> relay_hub_for(std::int64_t node) const;
  // Hub: forwards a "relay.<node>/..." event to that spoke; false when it was not for this node.
  bool relay_to_one(const std::shared_ptr<Link>& from, Frame& frame);
  // send() and send_packed(); `args` (when known) is what self-delivery hands over.
  // `owned` (when set) holds `payload`, and the frame body may take it.
  void send_payload(const SendTarget& target, std::string_view event, std::span<const std::uint8_t> payload,
                    const EventArgs* args, std::vector<std::uint8_t>* owned = nullptr);
  // The sender of the events `hello`'s node sends.
  static std::shared_ptr<const EventMeta> meta_of(const Hello& hello);
  // The sender of an event a hub relayed from `node`: its link's meta when this node has one.
  std::shared_ptr<const EventMeta> relayed_sender(std::uint64_t node) const;
  // What `hello` says of its node, for the peer table.
  static PeerRecord record_of(const Hello& hello);
  // Publishes routes_ from peers_. Caller holds mutex_.
  void publish_routes_locked();
  // Routes `target` from routes_ without the lock into `links`; false when the locked path must
  // decide (an expected peer not joined yet, or a node that is not a joined peer).
  // `routes` keeps the links alive while they are used (no reference count per link and send).
  bool route_fast(const SendTarget& target, std::optional<std::int64_t> want, std::shared_ptr<const Routes>& routes,
                  boost::container::small_vector<Link*, 8>& links) const;
  /// True the first time `what` is asked about (the engine's LogOnce: repeated refusals stay out of the log).
  bool first_time(const std::string& what);

  const MeshSettings settings_;
  const RelayPlan relay_plan_;
  Hello own_hello_;
  HandshakeIdentity identity_;  // own_hello_ and the token, for every link's handshake
  std::shared_ptr<const EventMeta> own_meta_;  // this node as the sender of its events to itself
  std::shared_ptr<ReadBufferPool> read_buffers_;  // set by the constructor
  BodyPtr own_hello_body_;  // io thread: own_hello_ encoded, for links without a nonce
  boost::asio::io_context io_;
  IoRunner runner_;  // who runs io_: the io thread, or a thread waiting for a call's answer
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  Listener listener_;
  std::thread thread_;
  bool self_delivery_ = false;

  mutable std::mutex mutex_;            // guards the fields down to shut_down_
  // One per kind of wait, each told only when its wait may be over: a woken thread that goes
  // back to sleep costs two context switches, times every peer joining or leaving.
  std::condition_variable ready_changed_;   // ready, or a peer can never join (wait_ready)
  std::condition_variable room_changed_;    // an early queue emptied (send)
  std::condition_variable links_changed_;   // no link left (shutdown)
  Group group_;                         // the engine: the peer table and the policy above the links
  Peers& peers_;                        // group_.table(): expected and joined peers (Dest references survive additions)
  std::vector<std::shared_ptr<Link>> links_;  // every open link
  bool stopping_ = false;
  bool shut_down_ = false;
  bool counts_final_ = false;  // final_stats() was taken: losses are no longer counted or logged
  // The route table: replaced under mutex_ (then routes_mutex_), copied by any thread under
  // routes_mutex_ alone. Not std::atomic<std::shared_ptr>: libstdc++ 12's load() unlocks with
  // a relaxed order, so a load's read of the pointer and the next store's write are unordered
  // (ThreadSanitizer reports it); a mutex costs the same two atomic operations per read.
  mutable std::mutex routes_mutex_;
  std::shared_ptr<const Routes> routes_;

  Inbox inbox_;                         // the attached task's sink (or what waits for it)

  std::vector<RemoteEvent> batch_;  // io thread: the events of the read in progress

  // Bumped by every send and receive from several threads: on a cache line of its own, away from
  // the settings every send reads (group_ keeps a reference; it is not used before this exists).
  alignas(64) TransportCounters counters_;
};

/// A control frame's body (hello, auth) holding `payload`.
inline BodyPtr control_body(std::vector<std::uint8_t> payload) {
  auto body = std::make_shared<Body>();
  body->payload = std::move(payload);
  return body;
}

}  // namespace ditask::detail::mesh
