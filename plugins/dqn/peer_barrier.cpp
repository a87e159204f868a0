// SPDX-License-Identifier: MIT
#include "peer_barrier.hpp"

#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>

#include <ditask/ditask.hpp>

#include "shared.hpp"

namespace dqn {

void peer_barrier(const std::string& name, std::chrono::milliseconds timeout) {
  auto& task = ditask::task();
  struct State {
    std::set<std::int64_t> waiting;
    std::set<std::int64_t> left;
  };
  // Shared with the handlers, which may run after this returns (until they are removed).
  auto state = std::make_shared<rl::Shared<State>>();
  state->update([&](State& s) {
    for (const auto& peer : task.router().peers()) {
      s.waiting.insert(peer.node_id);
    }
  });
  const std::string event = "barrier." + name;
  const auto arrived = task.on(event, [state](std::int64_t node) {
    state->update([&](State& s) { s.waiting.erase(node); });
  });
  const auto gone = task.on(ditask::events::peer_left, [state](const ditask::Kwargs& kw) {
    const auto node = kw.get<std::int64_t>("node_id");
    state->update([&](State& s) {
      if (s.waiting.erase(node) != 0) {
        s.left.insert(node);
      }
    });
  });
  task.emit_remote(event, task.router().node_id());
  std::set<std::int64_t> missing;
  std::set<std::int64_t> left;
  const bool done = state->wait([](const State& s) { return s.waiting.empty(); },
                                [&](State& s) { left = s.left; }, timeout);
  if (!done) {
    missing = state->read([](const State& s) { return s.waiting; });
  }
  task.off(event, arrived);
  task.off(ditask::events::peer_left, gone);
  auto names = [](const std::set<std::int64_t>& nodes) {
    std::string out;
    for (auto n : nodes) {
      out += (out.empty() ? "node " : ", node ") + std::to_string(n);
    }
    return out;
  };
  if (!missing.empty()) {
    throw std::runtime_error("barrier '" + name + "': no arrival of " + names(missing) + " within " +
                             std::to_string(timeout.count()) + " ms");
  }
  if (!left.empty()) {
    throw std::runtime_error("barrier '" + name + "': " + names(left) + " left before arriving");
  }
}

}  // namespace dqn
