// SPDX-License-Identifier: MIT
// The transport-neutral peer-group engine: the policy every transport follows above its own
// channels, written once. It owns the peer table and decides, under the transport's lock, who an
// event goes to ("not a peer" and the frame limit), holding events for a peer that has not joined
// under the one --send-policy rule, the readiness wait and its errors, the sender of received
// events (EventMeta), which events a peer is sent (the interest filter), log de-duplication and
// the loss and drop counters. A transport keeps only how it reaches peers and moves frames: the
// mesh its links, Redis its channels, the in-process transport of the engine's tests a function
// call. docs/design.md "Layout" and "One event's path".
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "ditask/error.hpp"
#include "ditask/event_meta.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/suggest.hpp"
#include "channel.hpp"
#include "inbox.hpp"
#include "node_settings.hpp"
#include "peer_table.hpp"
#include "transport.hpp"

namespace ditask::detail {

/// The sender of the events a peer sends, as its join record tells (`transport`: EventMeta::transport).
std::shared_ptr<const EventMeta> sender_meta(const PeerRecord& peer, std::string_view transport);

/// The error for an event of `size` bytes over the `limit` of `whom` ("" for this node's own
/// --max-frame-bytes, else the peer that would refuse it).
Error frame_too_large(std::string_view event, std::size_t size, std::size_t limit, const std::string& whom = {});

/// The error of an event for node `node` whose link closed after the send chose it: nothing was
/// sent, as for a peer that is away.
Error left_just_now(std::string_view event, std::int64_t node, const std::string& whom);

/// Whether a peer whose task handles `interest` (nullopt: everything) is sent event `name`: the
/// names in `always` (a trailing '.' makes a prefix) are sent to every peer. The task layer
/// declares them (NodeSettings::always_wanted); a transport does not know event names.
bool interested(const std::optional<std::set<std::string>>& interest, const std::vector<std::string>& always,
                std::string_view name);

/// Remembers what was logged once, bounded (repeated refusals stay out of the log).
class LogOnce {
 public:
  /// True the first time `what` is asked about (and always once 1024 entries are kept).
  bool first_time(const std::string& what) {
    if (seen_.count(what) != 0) {
      return false;
    }
    if (seen_.size() < 1024) {
      seen_.insert(what);
    }
    return true;
  }

 private:
  std::set<std::string> seen_;
};

/// The engine. `Traits` is the transport's, as for PeerTable (Conn, Held, Slot), and names its
/// channels: `ChannelRef` (a pointer or handle to a Channel that keeps it alive while used) and
/// `static ChannelRef channel(Expected&)` (a joined peer's). Thread: none of its own; every `_locked` member and table() run under the transport's lock, which the
/// waiting members take as `lock` and release while they wait on `changed` (which the transport
/// notifies when a peer joins, leaves or its held events leave).
template <class Traits>
class PeerGroup {
 public:
  using Table = PeerTable<Traits>;
  using Expected = typename Table::Expected;
  using Held = typename Traits::Held;

  /// `transport` names it in errors and EventMeta ("mesh", "redis"); `counters` are the
  /// transport's TransportStats.
  PeerGroup(const NodeSettings& settings, std::string transport, TransportCounters& counters,
            std::optional<std::int64_t> world_size)
      : settings_(settings), transport_(std::move(transport)), counters_(counters), table_(world_size) {}

  /// The table of expected and joined peers.
  Table& table() noexcept { return table_; }
  const Table& table() const noexcept { return table_; }
  const NodeSettings& settings() const noexcept { return settings_; }
  TransportCounters& counters() noexcept { return counters_; }

  /// Who one event goes to: peers joined now, and expected peers that never joined (their
  /// events are held). A peer joined twice (both sides dialled) is chosen once.
  struct Route {
    boost::container::small_vector<Expected*, 8> joined;
    boost::container::small_vector<Expected*, 8> early;
  };
  /// Chooses the peers of `target`; `want` is the node to look for (target.node, or the hub a
  /// relayed send goes through); `to_self`: this node takes it too. Errors: not_a_peer for a
  /// node that is no peer (`more_hint` is added to the hint that names the connected ones).
  Route route_locked(const SendTarget& target, std::optional<std::int64_t> want, bool to_self,
                     const std::string& more_hint = {}) {
    Route route;
    bool found = false;
    for (auto& e : table_.expected()) {
      if (want && e.node != want) {
        continue;
      }
      if (e.conn != typename Traits::Conn{}) {
        const auto* j = table_.joined(*e.node);
        if (!target.label.empty() && (j == nullptr || !labels_match(j->record.labels, target.label))) {
          continue;
        }
        if (std::none_of(route.joined.begin(), route.joined.end(), [&](const Expected* o) { return o->conn == e.conn; })) {
          route.joined.push_back(&e);
        }
        found = true;
      } else if (!e.joined_ever && target.label.empty()) {
        route.early.push_back(&e);
        found = true;
      }
    }
    if (target.node && !found && !(to_self && *target.node == settings_.node_id)) {
      std::vector<std::string> connected;
      for (const auto& [node, j] : table_.joined()) {
        connected.push_back(std::to_string(node));
      }
      const std::string known = join(connected);
      std::string hint = known.empty() ? "no peer is connected" : "connected peers: " + known;
      if (!more_hint.empty()) {
        hint += "; " + more_hint;
      }
      throw not_a_peer(settings_, *target.node, std::move(hint));
    }
    return route;
  }

  /// The channels of the joined peers one event goes to, each once.
  using Channels = boost::container::small_vector<typename Traits::ChannelRef, 8>;
  /// One send's route, decided under the lock: route_locked(); every chosen channel's frame
  /// limit (frame_too_large: then nothing is sent or held); then hold_locked() for each expected
  /// peer that never joined (`held()` makes its copy). A peer that joined while this waited for
  /// room is in the result instead. Errors: as route_locked() and hold_locked().
  template <class Lock, class Cv, class MakeHeld>
  Channels route_and_hold_locked(Lock& lock, Cv& changed, const SendTarget& target, std::optional<std::int64_t> want,
                                 bool to_self, const std::string& more_hint, std::string_view event,
                                 std::size_t size, MakeHeld held, Deadline& deadline) {
    auto route = route_locked(target, want, to_self, more_hint);
    Channels channels;
    for (Expected* e : route.joined) {
      channels.push_back(Traits::channel(*e));
    }
    check_frame_limits(channels, event, size);
    for (Expected* e : route.early) {
      if (hold_locked(lock, changed, *e, held(), size, event, deadline.at()) == Hold::joined &&
          e->conn != typename Traits::Conn{} &&
          std::none_of(route.joined.begin(), route.joined.end(), [&](const Expected* o) { return o->conn == e->conn; })) {
        route.joined.push_back(e);  // so a second entry of the same peer is not sent it again
        channels.push_back(Traits::channel(*e));
      }
    }
    return channels;
  }

  /// One whole send for a transport with no route snapshot of its own: this node's
  /// --max-frame-bytes (`size`: the event's bytes as the transport frames them), then under
  /// `mutex` route_and_hold_locked() (nothing at all once `closed()`), then send_on() outside it,
  /// from this node with no flags. Returns how many channels queued it. Errors: as those.
  template <class Mutex, class Cv, class Closed>
  std::size_t send(Mutex& mutex, Cv& changed, Closed closed, const SendTarget& target, OutgoingEvent& out,
                   std::string_view event, std::size_t size) {
    if (size > settings_.max_frame_bytes) {
      throw frame_too_large(event, size, settings_.max_frame_bytes);
    }
    const auto sender = static_cast<std::uint64_t>(settings_.node_id);
    Deadline deadline(settings_.send_timeout);
    Channels channels;
    {
      std::unique_lock lock(mutex);
      if (closed()) {
        return 0;
      }
      channels = route_and_hold_locked(lock, changed, target, target.node, false, {}, event, size,
                                       [&] { return HeldEvent{out.body(), sender, 0}; }, deadline);
    }
    return send_on(channels, out, event, sender, 0, deadline, false, target.node.value_or(-1));
  }

  /// A peer joined over `channel` (`join` is what table().join() returned): on its first join
  /// the events held for it go to the channel, before anything sent after the join (the caller
  /// holds the transport's lock). Those its task does not handle are counted unhandled instead of sent.
  template <class Join, class ChannelLike>
  void release_held_locked(const Join& join, ChannelLike& channel) {
    if (!join.first || join.held.empty()) {
      return;
    }
    const std::size_t unwanted = channel.send_held(join.held);
    counters_.sent -= unwanted;  // counted sent when they were held
    counters_.unhandled += unwanted;
  }

  /// Throws frame_too_large() when the event (`size` bytes) is over a channel's limit.
  template <class Range>
  static void check_frame_limits(const Range& channels, std::string_view event, std::size_t size) {
    for (const auto& c : channels) {
      if (const std::size_t limit = c->max_event_bytes(); size > limit) {
        throw frame_too_large(event, size, limit, c->peer());
      }
    }
  }

  /// Hands `out` to each of `channels` (pointers or handles to a Channel) and counts what each
  /// did: sent, dropped (logged the first and every 1000th time), lost (the peer just left) or
  /// unhandled (the peer has no handler for it). Returns how many queued it. For an event to one
  /// node (`to_node` >= 0: its only channel) a peer that just left is an error instead, as one
  /// that is away: nothing was sent, and the emitter knows. Errors: send_timed_out() when a
  /// channel's queue stayed full until `deadline` (the channels before it have the event);
  /// left_just_now().
  template <class Range>
  std::size_t send_on(const Range& channels, OutgoingEvent& out, std::string_view event, std::uint64_t sender,
                      std::uint16_t flags, Deadline& deadline, bool write_here, std::int64_t to_node = -1) {
    std::size_t queued = 0;
    for (const auto& c : channels) {
      auto& channel = *c;  // its own type: a final channel's calls are not virtual
      switch (channel.send_event(out, sender, flags, settings_.drop_when_full, deadline, write_here)) {
        case SendResult::queued:
          ++counters_.sent;
          ++queued;
          break;
        case SendResult::dropped:
          count_dropped(event, channel.peer(), "its send queue is full");
          break;
        case SendResult::closed:
          if (to_node >= 0) {
            throw left_just_now(event, to_node, channel.peer());
          }
          ++counters_.lost;
          DITASK_LOG(debug, transport_) << "event '" << event << "' not sent: " << channel.peer() << " just left";
          break;
        case SendResult::unwanted:
          ++counters_.unhandled;  // as the receiver would have counted it
          break;
        case SendResult::timed_out: {
          const Blocked why = channel.blocked();
          throw send_timed_out(event, why.whom, why.hint);
        }
      }
    }
    return queued;
  }

  /// What hold_locked() did with an event for a peer that has not joined.
  enum class Hold {
    held,     ///< kept until the peer's first join (counted sent)
    dropped,  ///< --send-policy drop and no room: counted dropped
    joined,   ///< the peer joined while this waited: send it on the peer's channel instead
  };
  /// Holds `event` (of `size` bytes) for `e`, which never joined, bounded by --send-queue-bytes.
  /// With no room: --send-policy drop drops and counts it; wait waits until there is room or
  /// the peer joined, until `deadline`. Errors: ditask::Error when that wait times out, or the
  /// event is over this node's --max-frame-bytes (nothing is held then).
  template <class Lock, class Cv>
  Hold hold_locked(Lock& lock, Cv& changed, Expected& e, Held event, std::size_t size, std::string_view name,
                   std::chrono::steady_clock::time_point deadline) {
    if (size > settings_.max_frame_bytes) {
      throw frame_too_large(name, size, settings_.max_frame_bytes);
    }
    const auto room = [&] { return Table::has_room(e, size, settings_.send_queue_bytes); };
    if (!room()) {
      if (settings_.drop_when_full) {
        count_dropped(name, Table::name_of(e), "its queue for before it joins is full");
        return Hold::dropped;
      }
      if (!changed.wait_until(lock, deadline, room)) {
        throw Error("event '" + std::string(name) + "' waited " + seconds_text(settings_.send_timeout) + " for " +
                        (e.node ? "node " + std::to_string(*e.node) : e.address) + ", which has not joined yet",
                    "start the peer, or raise --send-timeout / --send-queue-bytes");
      }
    }
    if (e.joined_ever) {
      return Hold::joined;
    }
    table_.hold(e, std::move(event), size, settings_.send_queue_bytes);  // room() held: it fits
    ++counters_.sent;
    return Hold::held;
  }

  /// A star hub's relay of an event from node `sender` that came over `from`: the joined peers
  /// to forward it to (all but those two), each once. Every expected peer that never joined (and
  /// is not the sender) gets a copy held, never waited for (`held` makes one; the relaying
  /// thread is the io thread): counted sent, or dropped when its queue for before it joins is full.
  template <class MakeHeld>
  boost::container::small_vector<typename Traits::Conn, 8> relay_route_locked(const typename Traits::Conn& from,
                                                                              std::int64_t sender, MakeHeld held,
                                                                              std::size_t size) {
    boost::container::small_vector<typename Traits::Conn, 8> to;
    for (const auto& [node, j] : table_.joined()) {
      if (!(j.conn == from) && node != sender) {
        to.push_back(j.conn);
      }
    }
    for (auto& e : table_.expected()) {
      if (!e.joined_ever && e.conn == typename Traits::Conn{} && e.node != sender) {
        hold_relayed_locked(e, held(), size);
      }
    }
    return to;
  }
  /// A relayed copy for `node` alone (a spoke's emit_to_node for another spoke): its joined
  /// connection, or nothing when it was held (never joined: as relay_route_locked) or dropped
  /// (it left, or is no peer).
  template <class MakeHeld>
  std::optional<typename Traits::Conn> relay_one_locked(std::int64_t node, MakeHeld held, std::size_t size) {
    if (const auto* j = table_.joined(node)) {
      return j->conn;
    }
    if (auto* e = table_.find_node(node); e != nullptr && !e->joined_ever) {
      hold_relayed_locked(*e, held(), size);
    } else {
      count_dropped("(relayed)", "node " + std::to_string(node), "it is not connected");
    }
    return std::nullopt;
  }

  /// Counts one event dropped for `whom` under --send-policy drop (or by a relay); logs the
  /// first and every 1000th.
  void count_dropped(std::string_view name, const std::string& whom, const char* why) {
    if (++counters_.dropped % 1000 == 1) {
      DITASK_LOG(warn, transport_) << "dropped event '" << name << "' for " << whom << ": " << why << " ("
                                   << counters_.dropped.load() << " dropped so far)";
    }
  }

  /// The error of a send that waited `--send-timeout` for room on its way to `whom`.
  Error send_timed_out(std::string_view name, const std::string& whom, const std::string& hint) const {
    return Error("event '" + std::string(name) + "': the send queue to " + whom + " stayed full for " +
                     seconds_text(settings_.send_timeout),
                 hint);
  }

  /// Waits until every expected peer joined and `up()` (the transport's own connection is up),
  /// a peer can never join (table().refused()), `failed()` says the transport cannot start, or
  /// --startup-timeout passed. True when ready.
  template <class Lock, class Cv, class Up, class Failed>
  bool wait_ready(Lock& lock, Cv& changed, Up up, Failed failed) {
    const auto deadline = std::chrono::steady_clock::now() + settings_.startup_timeout;
    const auto ready = [&] { return table_.ready() && up(); };
    changed.wait_until(lock, deadline, [&] { return failed() || table_.refused() || ready(); });
    return !failed() && ready();
  }
  /// The error when a required peer can never join: "<transport> cannot become ready: node N and ...".
  Error refused_error() const {
    const std::string all = join(table_.refusals(), "; ");
    const bool sizes = all.find("--world-size") != std::string::npos;
    return Error(transport_ + " cannot become ready: node " + std::to_string(settings_.node_id) + " and " + all,
                 sizes ? "give every launcher of the job the same --world-size: the sum of their --parallel-workers"
                       : "give every worker of the job the same --token (or DITASK_TOKEN) and --run-id");
  }
  /// The error after --startup-timeout: each missing peer with `why` it is missing; `where` is
  /// added after the time (" over Redis at ...").
  Error not_ready_error(const std::function<std::string(const Expected&)>& why, const std::string& where,
                        const std::string& hint) const {
    return Error(transport_ + " not ready after " + seconds_text(settings_.startup_timeout) + where + ": node " +
                     std::to_string(settings_.node_id) + " is still waiting for " + join(table_.missing(why), "; "),
                 hint);
  }

  // A relayed copy held for `e` until its first join, or dropped when that queue is full.
  void hold_relayed_locked(Expected& e, Held event, std::size_t size) {
    if (!table_.hold(e, std::move(event), size, settings_.send_queue_bytes)) {
      count_dropped("(relayed)", Table::name_of(e), "its queue for before it joins is full");
      return;
    }
    ++counters_.sent;
  }

  /// Whether `interest` (a peer's) asks for event `name` (interested(), with the task layer's names).
  bool wants(const std::optional<std::set<std::string>>& interest, std::string_view name) const {
    return interested(interest, settings_.always_wanted, name);
  }

  /// True the first time `what` is asked about (LogOnce). Caller holds the lock.
  bool first_time_locked(const std::string& what) { return logged_.first_time(what); }

 private:
  const NodeSettings& settings_;
  const std::string transport_;
  TransportCounters& counters_;
  Table table_;
  LogOnce logged_;
};

}  // namespace ditask::detail
