// SPDX-License-Identifier: MIT
// A trainer's side of the biggraph lock server: every call to it goes through here, so a server
// that dies is handled (and named) the same way whichever call found it gone. docs/biggraph.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

namespace biggraph {

/// The lock server as one trainer calls it. A call that fails because the server left waits for
/// its restart (`--auto-recover`), at most `patience`, and goes on with the restarted server,
/// which starts the current epoch's buckets again. Errors (every method): std::runtime_error
/// "the lock server is gone: ..." when it does not come back, "the lock server failed: ..." for
/// any other failure of a call. Thread: one trainer's.
class LockClient {
 public:
  LockClient(std::int64_t server, std::int64_t trainer, std::chrono::seconds patience);
  /// The server's answer to this trainer's request for a bucket of epoch `epoch` (0 first):
  /// {"lhs","rhs"}, or {"done": true|false} (none for now). Asked again after a restart.
  nlohmann::json acquire(int epoch);
  /// The bucket is trained. After a restart the new server does not know it: not told again
  /// (it is trained again this epoch).
  void release(int lhs, int rhs);
  /// The bucket held goes back to pending (a partition server left). Not told again after a
  /// restart (the new server holds nothing for this trainer).
  void abandon();
  /// Epoch `epoch` begins (the leader's call, once every trainer finished the one before).
  /// Repeated after a restart.
  void next_epoch(int epoch);
  /// Restarts of the server this trainer waited for.
  int restarts_seen() const noexcept { return restarts_; }

 private:
  // Runs `call`: true when it ran, false when the server was gone and has come back.
  bool attempt(const char* what, const std::function<void()>& call);
  // The server's attempt as this trainer's peer list says (-1: not a peer now).
  std::int64_t server_attempt() const;

  const std::int64_t server_;
  const std::int64_t trainer_;
  const std::chrono::seconds patience_;
  int restarts_ = 0;
};

}  // namespace biggraph
