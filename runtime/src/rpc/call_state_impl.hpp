// SPDX-License-Identifier: MIT
// The runtime's side of a Future's state (ditask/rpc_future.hpp's CallState).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../remote_event.hpp"
#include "ditask/rpc_future.hpp"

namespace ditask::detail {

class RpcEngine;
/// Runs `fn` on `engine`'s pool (on this thread when the engine is gone or stopping).
void post_callback(const std::weak_ptr<RpcEngine>& engine, std::function<void()> fn);

// Hidden: CallState is exported, and its nested type would be too.
struct __attribute__((visibility("hidden"))) CallState::Impl {

  mutable std::mutex mutex;
  mutable std::condition_variable completed;
  bool done = false;                                   // guarded by mutex
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
  std::optional<RemoteEvent> reply;                    // set before done: a remote result
  std::shared_ptr<void> local;                         // set before done: a local result
  std::vector<std::function<void()>> callbacks;        // guarded by mutex
  std::weak_ptr<RpcEngine> engine;                     // runs callbacks off the io thread; fixed before sending
  std::int64_t node = -1;                              // fixed before the call is sent
  std::string function;                                // fixed before the call is sent

  /// Completes with a remote reply (status 0) and posts the callbacks. Thread: any (the io thread).
  void complete_reply(RemoteEvent&& e);
  /// Completes with an error; callbacks are posted when `posted`, else run here. False when it
  /// had completed already (the error is dropped).
  bool complete_error(std::exception_ptr e, bool posted);

 private:
  // Marks it done and returns the callbacks to run. Caller holds mutex.
  std::vector<std::function<void()>> finish_locked();
  void run(std::vector<std::function<void()>> callbacks, bool posted);
};

}  // namespace ditask::detail
