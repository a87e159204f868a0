// SPDX-License-Identifier: MIT
// RpcEngine: the calls this node makes and their replies, membership, the service thread.
// Serving calls is in rpc_serve.cpp.
#include "../trace/trace.hpp"
#include "rpc_engine.hpp"

#include <fnmatch.h>

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "../codec/envelope.hpp"
#include "ditask/error.hpp"
#include "ditask/router.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/suggest.hpp"
#include "call_state_impl.hpp"
#include "rpc_wire.hpp"

namespace ditask::detail {

namespace {
std::mutex g_engine_mutex;
std::shared_ptr<RpcEngine> g_engine;  // guarded by g_engine_mutex

thread_local std::int64_t t_destination = kNoDestination;
}  // namespace

std::shared_ptr<RpcEngine> current_rpc_engine() {
  std::lock_guard lock(g_engine_mutex);
  return g_engine;
}

void set_current_rpc_engine(std::shared_ptr<RpcEngine> engine) {
  std::lock_guard lock(g_engine_mutex);
  g_engine = std::move(engine);
}

std::int64_t rref_destination() noexcept { return t_destination; }

void post_callback(const std::weak_ptr<RpcEngine>& weak, std::function<void()> fn) {
  auto engine = weak.lock();
  if (!engine || !engine->post_to_pool(fn)) {
    fn();  // stopping: run it on the completing thread
  }
}

void set_rref_destination(std::int64_t node) noexcept {
  t_destination = node;
  ObjectTable::forget_registrations();  // a new encoding begins (or none): the last one's were sent
}

RpcEngine::RpcEngine(std::shared_ptr<Transport> transport, Self self)
    : transport_(std::move(transport)),
      self_(std::move(self)),
      objects_(self_.node, [this](std::int64_t to, rpc_wire::RefOp op, std::uint64_t object, std::uint64_t token,
                                  std::int64_t about) { send_ref(to, op, object, token, about); }) {}

RpcEngine::~RpcEngine() {
  stop();
  close();
}

void RpcEngine::close() noexcept { refusals_.stop(); }

void RpcEngine::start() {
  objects_.set_self(std::shared_ptr<ObjectTable>(shared_from_this(), &objects_));  // shares the engine's life
  groups_.set_attempt(self_.meta ? self_.meta->attempt : 0);
  define_group_function();
  // An idle queue thread reads the calls of its caller itself (a running queue thread is joined
  // before the transport goes: stop()).
  queues_.set_io_turn(KeyedQueues::IoTurn{
      [this](const std::function<bool()>& done, WakeWord& word, std::atomic<bool>& would_run) {
        if (call_context_hooks()) {
          return false;
        }
        return transport_->wait_running_io(done, word, would_run, std::chrono::steady_clock::time_point::max(), true)
            .has_value();
      },
      [this] { transport_->offer_io(); }});
}

void RpcEngine::start_service_locked() {
  if (!service_thread_.joinable() && !stopping_) {
    service_thread_ = std::thread([this] { service_loop(); });  // it waits for mutex_, held here
  }
}

// ---- calls made ----

std::int64_t RpcEngine::resolve(const Callee& to, std::string_view display) const {
  if (to.node) {
    return *to.node;
  }
  std::vector<std::string> matches;
  std::vector<std::int64_t> nodes;
  auto matches_label = [&](const std::set<std::string>& labels) {
    for (const auto& label : labels) {
      if (::fnmatch(to.label_pattern.c_str(), label.c_str(), 0) == 0) {
        return true;
      }
    }
    return false;
  };
  if (matches_label(self_.labels)) {
    nodes.push_back(self_.node);
  }
  for (const auto& peer : transport_->peers()) {
    if (matches_label(peer.labels)) {
      nodes.push_back(peer.node_id);
    }
  }
  if (nodes.size() == 1) {
    return nodes.front();
  }
  for (auto n : nodes) {
    matches.push_back(std::to_string(n));
  }
  const bool role = to.label_pattern.starts_with("role.");
  const std::string what = role ? "role '" + to.label_pattern.substr(5) + "'" : "label '" + to.label_pattern + "'";
  if (nodes.empty()) {
    throw RpcError(RpcError::Kind::not_connected, -1, std::string(display), "no connected node has " + what,
                   role ? "give the callee that role with ditask --roles" : "check the callee's --labels");
  }
  throw RpcError(RpcError::Kind::not_connected, -1, std::string(display),
                 std::to_string(nodes.size()) + " nodes have " + what + " (nodes " + join(matches, ", ") + ")",
                 "call one of them by node id");
}

OutgoingCall RpcEngine::begin(const Callee& to, std::string_view display) {
  OutgoingCall call;
  call.state = std::make_shared<CallState>();
  auto& impl = call.state->impl();
  impl.function = std::string(display);
  impl.engine = weak_from_this();
  ++calls_;
  std::int64_t node = -1;
  try {
    node = resolve(to, display);
  } catch (...) {
    ++failed_;
    impl.complete_error(std::current_exception(), false);
    return call;
  }
  impl.node = node;
  const auto timeout = to.timeout.value_or(rpc_default_timeout());
  std::unique_lock lock(mutex_);
  std::optional<RpcError> refused;
  if (stopping_) {
    refused.emplace(RpcError::Kind::stopped, node, impl.function, "this node's task is stopping");
  } else if (timeout.count() <= 0) {  // e.g. a budget left over from a deadline: not sent at all
    refused.emplace(RpcError::Kind::timeout, node, impl.function,
                    "its timeout (" + std::to_string(timeout.count()) + " ms) had passed before it was sent: not sent",
                    "give Callee(node).within(ms) a positive time");
    ++timed_out_;
  } else if (auto gone = left_.find(node); gone != left_.end()) {
    refused.emplace(RpcError::Kind::not_connected, node, impl.function,
                    "node " + std::to_string(node) + " is not connected: it left (" + gone->second + ")");
  }
  if (refused) {
    lock.unlock();
    ++failed_;
    impl.complete_error(std::make_exception_ptr(*refused), false);
    return call;
  }
  call.id = next_id_++;
  if (trace::on()) {  // --trace: the call in flight (async, calls overlap) and the arrow to its callee
    trace::record_call_start(impl.function, trace::call_id(self_.node, call.id), node);
  }
  const auto deadline = timeout == std::chrono::milliseconds::max() ? std::chrono::steady_clock::time_point::max()
                                                                     : std::chrono::steady_clock::now() + timeout;
  pending_.add(call.id, PendingCalls::Call{call.state, node, deadline});
  // The service thread is woken only when it would sleep past this deadline (not for every call:
  // a deadline later than its alarm is seen when the alarm rings).
  const bool earliest = deadline < service_alarm_;
  if (earliest) {
    service_alarm_ = deadline;
  }
  if (deadline != std::chrono::steady_clock::time_point::max()) {
    start_service_locked();  // a fresh thread reads the timers first: no wake-up needed
  }
  lock.unlock();
  if (earliest) {
    service_wake_.notify_one();
  }
  set_rref_destination(node);  // for RRefs among the arguments, until send()
  call.context = capture_call_context(node);
  return call;
}

void RpcEngine::send(const OutgoingCall& call, const std::vector<std::uint8_t>* wire, EventArgs* args) {
  set_rref_destination(kNoDestination);  // the arguments are encoded: later values are no call's
  try {
    transmit(call.state->node(), rpc_wire::kCall, wire, args);
  } catch (const std::exception& e) {
    fail_call(call.id, RpcError::Kind::not_connected, e.what());
  }
}

void RpcEngine::transmit(std::int64_t node, const char* topic, const std::vector<std::uint8_t>* wire, EventArgs* args) {
  if (node == self_.node) {
    RemoteEvent e = wire != nullptr ? rpc_wire::local_event(topic, *wire, self_.meta)
                                    : rpc_wire::local_event(topic, codec::encode_event_args(*args), self_.meta);
    if (e.event == rpc_wire::kCall) {
      on_call(std::move(e));
    } else {
      on_reply(std::move(e));
    }
    return;
  }
  SendTarget target;
  target.node = node;
  if (wire != nullptr) {
    send_wire(*transport_, target, topic, *wire);
  } else {
    transport_->send(target, topic, *args);
  }
}

void RpcEngine::abort(const OutgoingCall& call, std::exception_ptr error) noexcept {
  ObjectTable::cancel_registrations();  // the handles among the arguments encoded before the failure
  set_rref_destination(kNoDestination);
  std::shared_ptr<CallState> state;
  {
    std::lock_guard lock(mutex_);
    state = finish_locked(call.id);
  }
  if (state) {
    ++failed_;
    state->impl().complete_error(std::make_exception_ptr(RpcError(RpcError::Kind::bad_arguments, state->node(),
                                                                  state->function(),
                                                                  "its arguments could not be encoded: " +
                                                                      describe(error))),
                                 false);
  }
}

std::shared_ptr<CallState> RpcEngine::finish_locked(std::uint64_t id) {
  auto state = pending_.remove(id);
  if (!state) {
    return nullptr;
  }
  if (trace::on()) {
    trace::record(trace::Phase::async_end, trace::Category::rpc, std::string_view(state->function()),
                  trace::call_id(self_.node, id), state->node());
  }
  return state;
}

void RpcEngine::fail_call(std::uint64_t id, RpcError::Kind kind, const std::string& message, std::string hint) {
  std::shared_ptr<CallState> state;
  {
    std::lock_guard lock(mutex_);
    state = finish_locked(id);
  }
  if (state) {
    ++failed_;
    if (kind == RpcError::Kind::timeout) {
      ++timed_out_;
    }
    state->impl().complete_error(
        std::make_exception_ptr(RpcError(kind, state->node(), state->function(), message, std::move(hint))), true);
  }
}

void RpcEngine::on_reply(RemoteEvent&& e) {
  std::vector<RemoteEvent*> one{&e};
  finish_replies(one);
}

void RpcEngine::finish_replies(std::vector<RemoteEvent*>& replies) {
  struct Done {
    RemoteEvent* event;
    rpc_wire::ReplyHeader header;
    std::shared_ptr<CallState> state;
    bool settled = false;
    std::vector<std::function<void()>> callbacks;
  };
  boost::container::small_vector<Done, 32> done;
  {
    ReceiptRun told;  // a batch's replies are acknowledged in runs
    for (RemoteEvent* e : replies) {
      told.add(e->receipt, e->seq, e->bytes, true);
      e->receipt.reset();
    }
  }
  for (RemoteEvent* e : replies) {
    Done d{e, {}, nullptr, false, {}};
    if (!rpc_wire::read_reply_header(*e, d.header)) {
      DITASK_LOG(warn, "rpc") << "ignoring a malformed reply from node " << (e->meta ? e->meta->sender : -1);
      continue;
    }
    done.push_back(std::move(d));
  }
  {
    std::lock_guard lock(mutex_);  // once for the whole batch
    for (auto& d : done) {
      d.state = finish_locked(d.header.id);
    }
  }
  for (auto& d : done) {
    if (!d.state) {
      ++late_;  // its call timed out (or failed) first: dropped
      continue;
    }
    if (d.header.status == 0) {
      ++answered_;
      d.settled = d.state->impl().settle(std::move(*d.event), d.header.rest, d.callbacks);
      continue;
    }
    ++failed_;
    const EventArgs rest = rpc_wire::json_args_after(*d.event, 2);
    auto text = [&](std::size_t i) {
      return i < rest.args.size() && rest.args[i].is_string() ? rest.args[i].get<std::string>() : std::string();
    };
    d.state->impl().complete_error(std::make_exception_ptr(RpcError(rpc_wire::kind_of(d.header.status), d.state->node(),
                                                                    d.state->function(), text(0), text(1))),
                                   true);
  }
  bool offer = false;
  auto& settled_here = replies_settled_here();
  for (auto& d : done) {
    if (d.settled) {
      ++settled_here;
      offer = offer || d.state->impl().would_run.load(std::memory_order_relaxed);
      d.state->impl().wake(std::move(d.callbacks));  // after the whole batch is settled
    }
  }
  if (offer) {
    transport_->offer_io();  // the caller woken reads its next answers itself
  }
  replies.clear();
}

// ---- io thread ----

void RpcEngine::take(std::vector<RemoteEvent>& events) {
  // Replies and calls are handled where they lie (taken_* point at them: each is moved once, into
  // what keeps it); the other events close up behind them, in their order.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    RemoteEvent& e = events[i];
    // One length check per event: most are not remote calls.
    const bool rpc = rpc_wire::is_rpc_topic(e.event);
    if (rpc && e.event == std::string_view(rpc_wire::kReply)) {
      taken_replies_.push_back(&e);
      continue;
    }
    if (rpc && e.event == std::string_view(rpc_wire::kCall)) {
      taken_calls_.push_back(&e);
      continue;
    }
    if (e.notice || rpc || kept != i) {
      // What came before it is handled before it (a leave after its replies), and before an
      // event kept moves into the place of one taken.
      flush_taken();
    }
    if (e.notice) {
      on_membership(e);
    } else if (rpc) {
      on_ref(std::move(e));
      continue;
    }
    if (kept != i) {
      events[kept] = std::move(e);
    }
    ++kept;
  }
  flush_taken();
  events.resize(kept);
}

void RpcEngine::flush_taken() {
  if (!taken_replies_.empty()) {
    finish_replies(taken_replies_);
  }
  if (!taken_calls_.empty()) {
    queue_calls(taken_calls_);
  }
}

void RpcEngine::on_membership(const RemoteEvent& e) {
  if (!e.args || (e.event != events::peer_left && e.event != events::peer_joined)) {
    return;
  }
  const auto& kwargs = e.args->kwargs;
  if (!kwargs.contains("node_id")) {
    return;
  }
  const auto node = kwargs["node_id"].get<std::int64_t>();
  if (e.event == events::peer_joined) {
    std::lock_guard lock(mutex_);
    left_.erase(node);
    return;
  }
  const std::string reason = kwargs.value("reason", std::string("connection lost"));
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(mutex_);
    left_[node] = reason;
    pending_.for_each([&](std::uint64_t id, const PendingCalls::Call& call) {
      if (call.node == node) {
        ids.push_back(id);
      }
    });
  }
  for (auto id : ids) {
    fail_call(id, RpcError::Kind::node_left,
              "node " + std::to_string(node) + " left (" + reason + ") before it answered");
  }
  groups_.node_left(node, kwargs.value("attempt", std::int64_t{0}), reason);
  post_service([this, node] { objects_.node_left(node); });
}

void RpcEngine::on_ref(RemoteEvent&& e) {
  if (e.receipt) {
    e.receipt->done(e.seq, e.bytes, true);
  }
  const std::int64_t sender = e.meta ? e.meta->sender : -1;
  std::uint64_t op = 0;
  std::uint64_t object = 0;
  std::uint64_t token = 0;
  std::int64_t about = 0;
  const PackedArgs view = e.packed ? e.packed->view() : PackedArgs{};
  const std::uint8_t* p = view.data;
  if (view.count != 4 || !unpack_value(p, view.end, op) || !unpack_value(p, view.end, object) ||
      !unpack_value(p, view.end, token) || !unpack_value(p, view.end, about)) {
    DITASK_LOG(warn, "rpc") << "ignoring a malformed handle message from node " << sender;
    return;
  }
  post_service([this, sender, op, object, token, about] {
    objects_.on_ref(sender, static_cast<rpc_wire::RefOp>(op), object, token, about);
  });
}

// ---- the service thread: timeouts and handle messages ----

void RpcEngine::post_service(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      return;
    }
    service_.push_back(std::move(job));
    start_service_locked();
  }
  service_wake_.notify_one();
}

void RpcEngine::send_ref(std::int64_t to, rpc_wire::RefOp op, std::uint64_t object, std::uint64_t token,
                         std::int64_t about) {
  auto send = [this, to, op, object, token, about] {
    if (to == self_.node) {
      objects_.on_ref(self_.node, op, object, token, about);
    } else {
      send_ref_now(to, op, object, token, about);
    }
  };
  post_service(std::move(send));
}

void RpcEngine::send_ref_now(std::int64_t to, rpc_wire::RefOp op, std::uint64_t object, std::uint64_t token,
                             std::int64_t about) noexcept {
  try {
    auto& wire = pack_buffer();
    pack_event(wire, static_cast<std::uint64_t>(op), object, token, about);
    SendTarget target;
    target.node = to;
    transport_->send_packed(target, rpc_wire::kRef, wire);
  } catch (const std::exception& e) {
    DITASK_LOG(debug, "rpc") << "handle message to node " << to << " not sent: " << e.what();
  }
}

void RpcEngine::service_loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!service_.empty()) {
      auto job = std::move(service_.front());
      service_.pop_front();
      lock.unlock();
      job();
      job = nullptr;
      lock.lock();
      continue;
    }
    // One pass over the pending calls when the alarm rings (their deadlines are not kept in order).
    std::vector<std::uint64_t> expired;
    const auto next = pending_.expired(std::chrono::steady_clock::now(), expired);
    if (!expired.empty()) {
      std::sort(expired.begin(), expired.end());  // the oldest call first
      lock.unlock();
      for (const std::uint64_t id : expired) {
        fail_call(id, RpcError::Kind::timeout,
                  "no answer in time: the call was cancelled (a late answer is dropped)",
                  "raise the timeout with Callee(node).within(ms) or rpc().set_default_timeout(ms)");
      }
      lock.lock();
      continue;
    }
    service_alarm_ = next;
    if (service_alarm_ == std::chrono::steady_clock::time_point::max()) {
      service_wake_.wait(lock);
    } else {
      // A copy: wait_until reads it again after waking, when service_alarm_ may have moved.
      const auto alarm = service_alarm_;
      service_wake_.wait_until(lock, alarm);
    }
    service_alarm_ = std::chrono::steady_clock::time_point::min();  // awake: begin() need not wake it
  }
}

void RpcEngine::stop() noexcept {
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      return;
    }
    stopping_ = true;  // no new call begins: the served calls below cannot wait on new ones
    pending_.for_each([&](std::uint64_t id, const PendingCalls::Call&) { ids.push_back(id); });
  }
  service_wake_.notify_all();
  groups_.stop();  // collectives waiting on the serving threads end before those are joined
  for (auto id : ids) {
    fail_call(id, RpcError::Kind::stopped, "this node's task stopped before the answer came");
  }
  if (service_thread_.joinable()) {
    service_thread_.join();
  }
  queues_.stop();
  pool_.stop();
  for (const auto& [owner, object, registrations] : objects_.clear()) {
    send_ref_now(owner, rpc_wire::RefOp::release, object, static_cast<std::uint64_t>(registrations), self_.node);
  }
}

bool RpcEngine::service_started() const {
  std::lock_guard lock(mutex_);
  return service_thread_.joinable();
}

RpcStats RpcEngine::stats() const {
  RpcStats s;
  s.calls = calls_.load();
  s.answered = answered_.load();
  s.failed = failed_.load();
  s.timed_out = timed_out_.load();
  s.late_replies = late_.load();
  s.served = served_.load();
  s.objects = objects_.owned();
  s.handles = objects_.held();
  return s;
}

}  // namespace ditask::detail
