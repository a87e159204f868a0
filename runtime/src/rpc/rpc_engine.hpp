// SPDX-License-Identifier: MIT
// Remote calls on one running task: the calls this node waits for (matched to replies by id,
// failed by timeout, by their callee leaving, or by stop), the calls it serves (one queue per
// caller, a pool for concurrent functions), and its remote objects. docs/rpc.md.
//
// Threads: take() runs on the transport's io thread (it only matches replies, queues calls and
// notes membership); served calls run on the per-caller threads or the pool; timeouts and handle
// messages run on the engine's service thread; begin()/send() on any caller's thread; calls that
// arrive after stop() are answered `stopped` on a refusal thread of their own until close().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../remote_event.hpp"
#include "../transport/transport.hpp"
#include "ditask/rpc.hpp"
#include "../group/group_hub.hpp"
#include "executors.hpp"
#include "object_table.hpp"
#include "pending_calls.hpp"
#include "rpc_registry.hpp"

namespace ditask::detail {

/// Thread: as above; every public method is safe from any thread but the io thread, except take().
class RpcEngine : public std::enable_shared_from_this<RpcEngine> {
 public:
  /// Who this node is.
  struct Self {
    std::int64_t node = 0;
    std::shared_ptr<const EventMeta> meta;
    std::set<std::string> labels;  ///< its labels ("node.<id>", --labels, role.<r>), for Callee::label
  };
  RpcEngine(std::shared_ptr<Transport> transport, Self self);
  ~RpcEngine();
  RpcEngine(const RpcEngine&) = delete;
  RpcEngine& operator=(const RpcEngine&) = delete;

  /// Readies the engine (after construction, when shared). Its service thread starts later,
  /// with its first job.
  void start();
  /// Fails the pending calls, refuses new ones, lets running served calls end, releases the
  /// handles held and destroys the objects owned. Idempotent. Not from a served call.
  /// Calls that arrive after it are answered `stopped` (on a thread of their own) until close().
  void stop() noexcept;
  /// Answers what stop() left to answer, then stops answering: for once the transport hands
  /// this engine nothing more (detached). Idempotent; the destructor calls it.
  void close() noexcept;

  /// Takes the remote-call events out of `events` and handles them; notes the membership
  /// notices (which stay). Thread: the io thread.
  void take(std::vector<RemoteEvent>& events);

  // ---- calls made ----
  /// Registers a call to `to` (named `display` in errors), or fails it at once.
  OutgoingCall begin(const Callee& to, std::string_view display);
  /// Sends a begun call: `wire` (packed) or `args` (JSON), one of them set.
  void send(const OutgoingCall& call, const std::vector<std::uint8_t>* wire, EventArgs* args);
  void abort(const OutgoingCall& call, std::exception_ptr error) noexcept;

  // ---- calls served ----
  /// Replies to the call this thread serves: `wire` (packed) or `args` (JSON).
  void reply(const std::vector<std::uint8_t>* wire, EventArgs* args);

  /// The transport its calls go through.
  const std::shared_ptr<Transport>& transport() const noexcept { return transport_; }

  /// Counters.
  RpcStats stats() const;
  /// Whether the service thread runs (it starts with its first job: a call with a deadline,
  /// a handle message, a node that left).
  bool service_started() const;
  /// This node's objects and handles.
  ObjectTable& objects() noexcept { return objects_; }
  /// This node's group collectives (the rounds it numbers and those it coordinates).
  GroupHub& groups() noexcept { return groups_; }
  std::int64_t self_node() const noexcept { return self_.node; }

  /// Runs `job` on the pool; false once stopped.
  bool post_to_pool(std::function<void()> job) { return pool_.submit(std::move(job)); }

  /// One call being served (rpc_serve.cpp).
  struct Served;

 private:
  std::int64_t resolve(const Callee& to, std::string_view display) const;
  // Removes pending call `id` and returns its state (null when it already ended). Caller holds mutex_.
  std::shared_ptr<CallState> finish_locked(std::uint64_t id);
  void fail_call(std::uint64_t id, RpcError::Kind kind, const std::string& message, std::string hint = {});
  void on_reply(RemoteEvent&& e);
  void on_call(RemoteEvent&& e);
  // The io thread's batch: replies and calls of one read are handled together (one lock of the
  // pending table, one wake-up of a caller's queue); anything else in the batch flushes them first.
  void flush_taken();
  void finish_replies(std::vector<RemoteEvent*>& replies);
  void queue_calls(std::vector<RemoteEvent*>& calls);
  // Reads a call and finds what serves it; null (logged) when malformed.
  std::unique_ptr<Served> admit_call(RemoteEvent&& e);
  void on_ref(RemoteEvent&& e);
  void on_membership(const RemoteEvent& e);
  // Runs a call; `last`: none of its caller's calls waits behind it (its answer may be written inline).
  void serve(Served& call, bool last);
  void serve_and_delete(Served* call, bool last);
  // Serves a define_inline call on this (the receiving) thread; its answer may be held.
  void serve_on_arrival(Served* call);
  // Answers `stopped` to a call that came after stop() (and deletes it).
  void refuse_and_delete(Served* call);
  void reply_error(std::int64_t caller, std::uint64_t id, RpcError::Kind kind, const std::string& message,
                   const std::string& hint);
  void send_reply(std::int64_t caller, const std::vector<std::uint8_t>* wire, EventArgs* args);
  // Sends a call or a reply (`wire` or `args`) to `node`; to this node itself, hands it over here.
  // Errors: the transport's (an unknown node, a full queue).
  void transmit(std::int64_t node, const char* topic, const std::vector<std::uint8_t>* wire, EventArgs* args);
  // Sends a handle message now (the service thread, or stop()); a failure is logged.
  void send_ref_now(std::int64_t to, rpc_wire::RefOp op, std::uint64_t object, std::uint64_t token,
                    std::int64_t about) noexcept;
  void send_ref(std::int64_t to, rpc_wire::RefOp op, std::uint64_t object, std::uint64_t token, std::int64_t about);
  void post_service(std::function<void()> job);
  // Starts the service thread unless it runs or the engine stops. Caller holds mutex_.
  void start_service_locked();
  void service_loop();

  const std::shared_ptr<Transport> transport_;
  const Self self_;
  ObjectTable objects_;
  GroupHub groups_;
  KeyedQueues queues_;
  ElasticPool pool_{64};
  // Answers `stopped` to calls that arrive after stop(): the io thread that refuses them may
  // not send, and the callers would otherwise wait for node_left or their timeout.
  ElasticPool refusals_{1};

  mutable std::mutex mutex_;
  std::condition_variable service_wake_;
  PendingCalls pending_;                        // guarded by mutex_
  std::map<std::int64_t, std::string> left_;    // guarded by mutex_: nodes gone, and why
  std::deque<std::function<void()>> service_;   // guarded by mutex_
  std::uint64_t next_id_ = 1;                   // guarded by mutex_
  // guarded by mutex_: when the sleeping service thread wakes by itself (min while it is awake)
  std::chrono::steady_clock::time_point service_alarm_ = std::chrono::steady_clock::time_point::min();
  bool stopping_ = false;                       // guarded by mutex_
  std::thread service_thread_;
  std::vector<RemoteEvent*> taken_replies_, taken_calls_;  // the io thread's (take()): into its events

  std::atomic<std::uint64_t> calls_{0}, answered_{0}, failed_{0}, timed_out_{0}, late_{0}, served_{0};
};

/// Defines "ditask.group", which a group's first member serves for its collectives (group_api.cpp).
void define_group_function();

/// The engine of the running task in a worker, or null. Thread: any.
std::shared_ptr<RpcEngine> current_rpc_engine();
/// Sets it (join_transport) or clears it (stop).
void set_current_rpc_engine(std::shared_ptr<RpcEngine> engine);

/// The timeout of a call whose Callee sets none (Rpc::set_default_timeout).
std::chrono::milliseconds rpc_default_timeout() noexcept;

/// The node an RRef being encoded now goes to (set while a call's arguments or a reply are
/// packed on this thread), or kNoDestination.
inline constexpr std::int64_t kNoDestination = -2;
std::int64_t rref_destination() noexcept;
void set_rref_destination(std::int64_t node) noexcept;
/// The call context a library's hooks give for a call to `to` (empty without hooks).
std::vector<std::uint8_t> capture_call_context(std::int64_t to);
/// Hands a served call's context to the library's hooks (nothing for an empty one).
void restore_call_context(const std::vector<std::uint8_t>& context, std::int64_t caller);
/// The caller of the call this thread serves (where its result's RRefs go), or kNoDestination.
std::int64_t serving_destination() noexcept;
/// Whether this thread serves a remote call now.
inline bool serving_call_here() noexcept { return serving_destination() != kNoDestination; }
/// Whether a library installed call-context hooks (the context of a thread then matters).
bool call_context_hooks() noexcept;

}  // namespace ditask::detail
