// SPDX-License-Identifier: MIT
#include "lock_client.hpp"

#include <iostream>
#include <stdexcept>
#include <string>

#include <ditask/ditask.hpp>

#include "job.hpp"

namespace biggraph {

LockClient::LockClient(std::int64_t server, std::int64_t trainer, std::chrono::seconds patience)
    : server_(server), trainer_(trainer), patience_(patience) {}

std::int64_t LockClient::server_attempt() const {
  for (const auto& peer : ditask::task().router().peers()) {
    if (peer.node_id == server_) {
      return peer.attempt;
    }
  }
  return -1;
}

bool LockClient::attempt(const char* what, const std::function<void()>& call) {
  const auto before = server_attempt();
  try {
    call();
    return true;
  } catch (const ditask::RpcError& e) {
    if (e.kind() != ditask::RpcError::Kind::node_left && e.kind() != ditask::RpcError::Kind::not_connected) {
      throw std::runtime_error(std::string("the lock server failed: ") + e.what());
    }
    std::cout << "biggraph: trainer " << trainer_ << ": the lock server (node " << server_ << ") is gone ("
              << e.reason() << ", at " << what << "); waiting for its restart" << std::endl;
    // Back means a later incarnation than the one this call went to; a join between the look
    // and the wait is caught by the waiter made before the look.
    auto& task = ditask::task();
    const auto deadline = std::chrono::steady_clock::now() + patience_;
    for (;;) {
      auto joined = task.waiter(ditask::events::peer_joined);
      if (server_attempt() > before) {
        break;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !joined.wait(left)) {
        throw std::runtime_error("the lock server is gone: node " + std::to_string(server_) + " did not come back within " +
                                 std::to_string(patience_.count()) + " s (" + e.what() + ")");
      }
    }
    ++restarts_;
    std::cout << "biggraph: trainer " << trainer_ << ": the lock server (node " << server_ << ") is back (attempt "
              << server_attempt() << "); the epoch's buckets are trained again from the start" << std::endl;
    return false;
  }
}

nlohmann::json LockClient::acquire(int epoch) {
  nlohmann::json grant;
  while (!attempt(kAcquire, [&] { grant = ditask::rpc().call<nlohmann::json>(server_, kAcquire, trainer_, epoch); })) {
  }
  return grant;
}

void LockClient::release(int lhs, int rhs) {
  (void)attempt(kRelease, [&] { ditask::rpc().call<void>(server_, kRelease, trainer_, lhs, rhs); });
}

void LockClient::abandon() {
  (void)attempt(kAbandon, [&] { ditask::rpc().call<void>(server_, kAbandon, trainer_); });
}

void LockClient::next_epoch(int epoch) {
  while (!attempt(kNextEpoch, [&] { ditask::rpc().call<void>(server_, kNextEpoch, epoch); })) {
  }
}

}  // namespace biggraph
