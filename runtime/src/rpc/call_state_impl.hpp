// SPDX-License-Identifier: MIT
// The runtime's side of a Future's state (ditask/rpc_future.hpp's CallState).
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../remote_event.hpp"
#include "../wake_word.hpp"
#include "ditask/rpc_future.hpp"

namespace ditask::detail {

class RpcEngine;
/// How many remote replies this thread has settled (RpcEngine::finish_replies on it): a waiter
/// whose own run read more answers than its own holds no inline-write grant (CallState::wait).
std::uint64_t& replies_settled_here() noexcept;
/// Runs `fn` on `engine`'s pool (on this thread when the engine is gone or stopping).
void post_callback(const std::weak_ptr<RpcEngine>& engine, std::function<void()> fn);

// Hidden: CallState is exported, and its nested type would be too.
struct __attribute__((visibility("hidden"))) CallState::Impl {

  mutable std::mutex mutex;
  mutable WakeWord completed;  // moved when done is set: wakes wait()
  // Set under mutex, after the result or error (release); read without it (acquire) by the
  // fast paths: a result or error seen done is never written again.
  std::atomic<bool> done{false};
  // Its waiter would run the transport's io work itself (it sleeps in wait()): the thread that
  // wakes it lets the io work go (Transport::offer_io).
  std::atomic<bool> would_run{false};
  // The error, set before done: an RpcError as its parts, from which each waiter throws a new
  // one, so no exception object or what() text is shared between threads (libstdc++ counts
  // both with atomics ThreadSanitizer cannot see); any other exception (a continuation's) as it came.
  struct RpcErrorParts {
    RpcError::Kind kind;
    std::int64_t node;
    std::string function, reason, hint;
  };
  std::optional<RpcErrorParts> rpc_error;
  std::exception_ptr error;
  // A remote result, as its event came (its bytes, or JSON for a reply that came so), and where
  // the result lies in the bytes (read with the reply's header): not the whole event, whose
  // receipt and sender a result does not need.
  struct Reply {
    std::optional<PackedPayload> packed;
    std::optional<EventArgs> args;
    PackedArgs result;  // packed: the positional values after the reply's header
  };
  std::optional<Reply> reply;                          // set before done: a remote result
  std::shared_ptr<void> local;                         // set before done: a local result
  std::vector<std::function<void()>> callbacks;        // guarded by mutex
  std::weak_ptr<RpcEngine> engine;                     // runs callbacks off the io thread; fixed before sending
  std::int64_t node = -1;                              // fixed before the call is sent
  std::string function;                                // fixed before the call is sent

  /// Completes with a remote reply (status 0) in two steps, so that a batch of replies is settled
  /// before any waiter is woken (a woken caller then finds the later ones done instead of sleeping
  /// on each): settle() stores the reply (`result`: its values after the header) and returns false
  /// if it had completed already; wake() wakes the waiters and posts the callbacks `settle`
  /// returned. Thread: any (the io thread).
  bool settle(RemoteEvent&& e, const PackedArgs& result, std::vector<std::function<void()>>& to_run);
  void wake(std::vector<std::function<void()>> to_run) { run(std::move(to_run), true); }
  /// Completes with an error; callbacks are posted when `posted`, else run here. False when it
  /// had completed already (the error is dropped).
  bool complete_error(std::exception_ptr e, bool posted);

 private:
  // Marks it done and returns the callbacks to run. Caller holds mutex.
  std::vector<std::function<void()>> finish_locked();
  void run(std::vector<std::function<void()>> callbacks, bool posted);
};

}  // namespace ditask::detail
