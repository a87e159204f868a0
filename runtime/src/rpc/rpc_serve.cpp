// SPDX-License-Identifier: MIT
// RpcEngine: serving calls. A call is queued on the io thread (behind its caller's earlier
// calls, or on the pool for a concurrent function), converted and run there, and answered by
// that thread (with an inline write when the link is idle).
#include <algorithm>
#include <chrono>
#include <cstring>

#include "../trace/trace.hpp"
#include "../codec/envelope.hpp"
#include "../transport/inline_write.hpp"
#include "ditask/error.hpp"
#include "ditask/runtime/log.hpp"
#include "call_state_impl.hpp"
#include "rpc_engine.hpp"
#include "rpc_wire.hpp"

namespace ditask::detail {

/// One call being served: what came, and what runs it.
struct RpcEngine::Served {
  RemoteEvent event;
  rpc_wire::CallHeader header;
  std::shared_ptr<const RpcEntry> entry;
  std::shared_ptr<void> object;  // a method's object (kept alive while it runs)
  bool object_missing = false;
  std::string class_name;
  std::int64_t caller = 0;
  // While it runs:
  bool user = false;     // the arguments converted: an exception now is the function's
  bool queued = false;   // it runs on its caller's queue (the queue counts as idle once it answered)
  bool replied = false;
  std::chrono::steady_clock::time_point replied_at;  // when the answer was handed to the transport
};

namespace {
thread_local RpcEngine* t_engine = nullptr;

// A served call's reply waits for the replies of the calls queued behind it from the same
// caller (one write for them all, docs/rpc.md "Threads") only while the function that runs next
// took at most kQuickRun last time, and for at most kHoldReplies from the first reply held.
constexpr std::chrono::nanoseconds kQuickRun{20'000};
constexpr std::chrono::nanoseconds kHoldReplies{50'000};
thread_local std::chrono::steady_clock::time_point t_held_since;

bool quick(const RpcEntry* entry) {
  return entry != nullptr && entry->last_run_ns.load(std::memory_order_relaxed) <= kQuickRun.count();
}

thread_local void* t_call = nullptr;  // RpcEngine::Served* (private type)
thread_local std::shared_ptr<void> t_call_state;  // served_call_state()
}  // namespace

std::unique_ptr<RpcEngine::Served> RpcEngine::admit_call(RemoteEvent&& e) {
  auto call = std::make_unique<Served>();
  if (!rpc_wire::read_call_header(e, call->header)) {
    DITASK_LOG(warn, "rpc") << "ignoring a malformed call from node " << (e.meta ? e.meta->sender : -1);
    return nullptr;
  }
  call->caller = e.meta ? e.meta->sender : self_.node;
  if (call->header.object == 0) {
    call->entry = rpc_registry().function(call->header.function);
  } else if (auto found = objects_.find(call->header.object)) {
    call->object = std::move(found->object);
    call->class_name = std::move(found->class_name);
    call->entry = rpc_registry().method(call->class_name, call->header.function);
  } else {
    call->object_missing = true;
  }
  call->event = std::move(e);
  return call;
}

void RpcEngine::on_call(RemoteEvent&& e) {
  std::vector<RemoteEvent*> one{&e};
  queue_calls(one);
}

void RpcEngine::queue_calls(std::vector<RemoteEvent*>& calls) {
  // A job owns its call through a plain pointer (two pointers: the job needs no allocation of
  // its own); serve_and_delete() deletes it, and a refused batch is deleted here.
  std::vector<KeyedQueues::Job> jobs;
  std::vector<Served*> batch;
  std::int64_t key = 0;
  bool served_here = false;
  // The caller whose queue was last seen idle: it stays idle while this batch queues nothing of its
  // own (only the thread reading its link queues its calls), so a run of its calls asks once.
  std::int64_t seen_idle = kNoDestination;
  auto submit = [&] {
    if (!jobs.empty() && !queues_.submit(key, jobs)) {
      for (Served* call : batch) {
        refuse_and_delete(call);
      }
    }
    jobs.clear();
    batch.clear();
  };
  {
    ReceiptRun told;  // acknowledged on arrival (in runs): a queue of calls never stalls the link
    for (RemoteEvent* e : calls) {
      told.add(e->receipt, e->seq, e->bytes, true);
      e->receipt.reset();
    }
  }
  for (RemoteEvent* e : calls) {
    auto owned = admit_call(std::move(*e));
    if (!owned) {
      continue;
    }
    Served* call = owned.release();
    // define_inline: here and now, unless this caller's earlier calls are still to run. Not a
    // call to this node itself: it is read on the calling thread, which may be serving a call.
    if (call->entry && call->entry->on_arrival && call->caller != self_.node &&
        (jobs.empty() || key != call->caller) && (seen_idle == call->caller || queues_.idle(call->caller))) {
      seen_idle = call->caller;
      serve_on_arrival(call);
      served_here = true;
      continue;
    }
    if (call->entry && call->entry->concurrent) {
      if (!pool_.submit([this, call] { serve_and_delete(call, true); })) {
        refuse_and_delete(call);
      }
      continue;
    }
    if (!jobs.empty() && key != call->caller) {
      submit();  // one submission per run of calls from the same caller
    }
    key = call->caller;
    if (seen_idle == key) {
      seen_idle = kNoDestination;
    }
    call->queued = true;
    jobs.emplace_back([this, call](Turn turn) {
      if (turn == Turn::refused) {
        refuse_and_delete(call);  // the callee began to stop before this call's turn
      } else {
        serve_and_delete(call, turn == Turn::last);
      }
    });
    batch.push_back(call);
  }
  submit();
  calls.clear();
  if (served_here) {
    release_held_writes();  // the answers of the calls served on arrival: one write
  }
}

void RpcEngine::serve_on_arrival(Served* call) {
  const auto entry = call->entry;  // the scope names it until it ends; the call is deleted before
  const OnArrivalScope scope(entry->name);
  serve_and_delete(call, false);  // held (a quick one) until the batch ends
}

void RpcEngine::refuse_and_delete(Served* call) {
  const std::int64_t caller = call->caller;
  const std::uint64_t id = call->header.id;
  if (!refusals_.submit([this, caller, id] {
        reply_error(caller, id, RpcError::Kind::stopped, "node " + std::to_string(self_.node) + " is stopping", "");
      })) {
    DITASK_LOG(debug, "rpc") << "call '" << call->header.function << "' from node " << caller
                             << " dropped: this node's task has stopped";
  }
  delete call;
}

void RpcEngine::serve_and_delete(Served* call, bool last) {
  std::unique_ptr<Served> owned(call);
  serve(*call, last);
}

void RpcEngine::serve(Served& call, bool last) {
  t_engine = this;
  t_call = &call;
  t_call_state.reset();
  set_rref_destination(kNoDestination);  // until its reply is encoded (begin_reply): no handle travels
  if (last) {
    grant_inline_write();  // the answer is written here, with the answers held before it
  } else {
    (void)take_inline_write();  // no grant left over from an earlier wait
  }
  if (!quick(call.entry.get())) {
    release_held_writes();  // it may run long: the answers held go first
    // ... and what arrives meanwhile is read by the io thread, not left for this thread's next
    // turn (a queue thread that read this call itself let the io work go).
    transport_->want_io();
  } else if (!last && !holding_writes()) {
    hold_writes();
    t_held_since = std::chrono::steady_clock::now();
  }
  const auto began = std::chrono::steady_clock::now();
  const auto& h = call.header;
  // --trace: its run here, where the arrow from its caller ends.
  const trace::Span span(trace::Category::rpc, h.function, call.caller, trace::call_id(call.caller, h.id));
  // Named in an error's text only (a served call builds no string of its own).
  const auto where = [this] { return "node " + std::to_string(self_.node); };
  try {
    if (queues_.stopping()) {
      reply_error(call.caller, h.id, RpcError::Kind::stopped, where() + " is stopping", "");
    } else if (call.object_missing) {
      reply_error(call.caller, h.id, RpcError::Kind::unknown_object,
                  "no object #" + std::to_string(h.object) + " on " + where() +
                      " (every handle to it was released, or its owner restarted)",
                  "");
    } else if (!call.entry) {
      const bool method = h.object != 0;
      const std::string what = method ? "method '" + h.function + "' of class '" + call.class_name + "'"
                               : h.function.starts_with("new ")
                                   ? "class '" + h.function.substr(4) + "' (or it has no constructor)"
                                   : "function '" + h.function + "'";
      std::string hint = rpc_registry().suggest(method ? call.class_name : "", h.function);
      if (hint.empty()) {
        hint = method ? "add it with define_class(...).method(\"" + h.function + "\", ...)"
                      : "define it on the callee with rpc().define(\"" + h.function + "\", ...) before task().start()";
      }
      reply_error(call.caller, h.id, RpcError::Kind::unknown_function, "no " + what + " on " + where(), hint);
    } else {
      const EventMeta& meta = *call.event.meta;
      restore_call_context(h.context, call.caller);  // current while the arguments convert and it runs
      bool done = false;
      if (call.event.packed && call.entry->handlers.packed) {
        done = call.entry->handlers.packed(h.rest, meta);  // read with the header: the bytes stay in call.event
      }
      if (!done) {
        call.entry->handlers.raw(rpc_wire::json_args_after(call.event, rpc_wire::kCallHeaderValues), meta);
      }
    }
  } catch (...) {
    ObjectTable::cancel_registrations();  // a reply that failed to encode: its handles never went
    if (!call.replied) {
      const std::string text = describe(std::current_exception());
      if (call.user) {
        reply_error(call.caller, h.id, RpcError::Kind::remote_exception, text, hint_of(std::current_exception()));
      } else {
        reply_error(call.caller, h.id, RpcError::Kind::bad_arguments, "the arguments do not fit: " + text,
                    "pass what the function's parameters take");
      }
    }
  }
  ++served_;
  // Its run up to its answer: the answer's own write (inline, for the last of a batch) is not the
  // function's. An answered call reads no clock again.
  const auto ended = call.replied ? call.replied_at : std::chrono::steady_clock::now();
  if (call.entry) {
    const auto ran = std::chrono::duration_cast<std::chrono::nanoseconds>(ended - began).count();
    call.entry->last_run_ns.store(static_cast<std::uint32_t>(std::min<std::int64_t>(ran, RpcEntry::kNeverRan - 1)),
                                  std::memory_order_relaxed);
  }
  if (last || ended - t_held_since > kHoldReplies) {
    release_held_writes();
  }
  set_rref_destination(kNoDestination);
  t_call_state.reset();  // a library's state of this call ends with it
  t_call = nullptr;
  t_engine = nullptr;
}

void RpcEngine::reply(const std::vector<std::uint8_t>* wire, EventArgs* args) {
  auto* call = static_cast<Served*>(t_call);
  if (call == nullptr || t_engine != this) {
    throw Error("no remote call is being served on this thread");
  }
  call->replied = true;
  call->replied_at = std::chrono::steady_clock::now();
  if (call->queued) {
    KeyedQueues::answered();  // its caller's next call may run on arrival
  }
  send_reply(call->caller, wire, args);
}

void RpcEngine::reply_error(std::int64_t caller, std::uint64_t id, RpcError::Kind kind, const std::string& message,
                            const std::string& hint) {
  if (auto* call = static_cast<Served*>(t_call)) {
    call->replied = true;
    call->replied_at = std::chrono::steady_clock::now();
    if (call->queued && call->caller == caller) {
      KeyedQueues::answered();
    }
  }
  auto& wire = pack_buffer();
  pack_event(wire, id, rpc_wire::status_of(kind), message, hint);
  send_reply(caller, &wire, nullptr);
}

void RpcEngine::send_reply(std::int64_t caller, const std::vector<std::uint8_t>* wire, EventArgs* args) {
  try {
    transmit(caller, rpc_wire::kReply, wire, args);
  } catch (const std::exception& e) {
    DITASK_LOG(debug, "rpc") << "reply to node " << caller << " not sent: " << e.what();
  }
}

std::int64_t serving_destination() noexcept {
  auto* call = static_cast<RpcEngine::Served*>(t_call);
  return call != nullptr ? call->caller : kNoDestination;
}

// ---- the serving helpers rpc.hpp's templates call ----

std::shared_ptr<void>& served_call_state() noexcept { return t_call_state; }

std::int64_t encoding_destination() noexcept { return rref_destination(); }

std::uint64_t serving_call_id() noexcept {
  auto* call = static_cast<RpcEngine::Served*>(t_call);
  return call != nullptr ? call->header.id : 0;
}

void* serving_object() noexcept {
  auto* call = static_cast<RpcEngine::Served*>(t_call);
  return call != nullptr ? call->object.get() : nullptr;
}

void begin_reply() noexcept { set_rref_destination(serving_destination()); }

void enter_user_code() noexcept {
  if (auto* call = static_cast<RpcEngine::Served*>(t_call)) {
    call->user = true;
  }
}

void reply_packed(const std::vector<std::uint8_t>& wire) {
  if (t_engine == nullptr) {
    throw Error("no remote call is being served on this thread");
  }
  t_engine->reply(&wire, nullptr);
}

void reply_args(EventArgs args) {
  if (t_engine == nullptr) {
    throw Error("no remote call is being served on this thread");
  }
  t_engine->reply(nullptr, &args);
}

}  // namespace ditask::detail
