// SPDX-License-Identifier: MIT
#include "group_hub.hpp"

#include <algorithm>
#include <stdexcept>

namespace ditask::detail {

namespace {

constexpr std::size_t kEndedKept = 1024;

nlohmann::json failure(const char* kind, std::int64_t node, const std::string& message) {
  return {{"ok", false}, {"kind", kind}, {"node", node}, {"message", message}};
}

std::string seconds_of(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

}  // namespace

std::uint64_t GroupHub::next_round(const std::string& group) {
  std::lock_guard lock(mutex_);
  return ++next_[group];
}

void GroupHub::fail_locked(Round& round, const char* kind, std::int64_t node, const std::string& message) {
  if (round.done) {
    return;
  }
  round.done = true;
  round.answer = failure(kind, node, message);
}

void GroupHub::remember_locked(const Key& key, const nlohmann::json& answer) {
  if (ended_.emplace(key, answer).second) {
    ended_order_.push_back(key);
  }
  while (ended_order_.size() > kEndedKept) {
    ended_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
}

nlohmann::json GroupHub::arrive(const std::string& group, std::uint64_t round_no, std::int64_t from,
                                GroupArrival arrival, std::chrono::milliseconds timeout) {
  const Key key{group, round_no};
  std::unique_lock lock(mutex_);
  if (stopping_) {
    return failure("stopped", -1, "the coordinator's task is stopping");
  }
  if (auto ended = ended_.find(key); ended != ended_.end()) {
    return ended->second;  // the round failed before this member came
  }
  auto it = rounds_.try_emplace(key, arrival).first;
  Round& round = it->second;
  ++round.waiters;
  if (!round.done) {
    for (auto member : round.state.members()) {
      if (auto gone = left_.find(member); gone != left_.end()) {
        fail_locked(round, "member_left", member, "member node " + std::to_string(member) + " left (" + gone->second + ")");
        break;
      }
    }
  }
  if (!round.done) {
    if (auto misfit = round.state.add(from, std::move(arrival))) {
      fail_locked(round, "mismatch", -1, *misfit);
    } else if (round.state.complete()) {
      try {
        round.answer = {{"ok", true}, {"value", round.state.result()}};
        round.done = true;
      } catch (const std::exception& e) {
        fail_locked(round, "mismatch", -1, e.what());
      }
    }
    changed_.notify_all();
  }
  const auto deadline = timeout == std::chrono::milliseconds::max()
                            ? std::chrono::steady_clock::time_point::max()
                            : std::chrono::steady_clock::now() + timeout;
  while (!round.done) {
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !round.done) {
      fail_locked(round, "timeout", -1,
                  "not every member arrived within " + seconds_of(timeout) + ": waiting for node(s) " +
                      node_list_text(round.state.missing()));
      changed_.notify_all();
    }
  }
  nlohmann::json answer = round.answer;
  const bool failed = !answer.value("ok", false);
  if (failed) {
    remember_locked(key, answer);
  }
  if (--round.waiters == 0) {
    rounds_.erase(it);  // every member that came has its answer (later ones find a failure in ended_)
  }
  return answer;
}

void GroupHub::node_left(std::int64_t node, const std::string& reason) {
  std::lock_guard lock(mutex_);
  left_[node] = reason;
  for (auto& [key, round] : rounds_) {
    const auto& members = round.state.members();
    if (std::find(members.begin(), members.end(), node) != members.end()) {
      fail_locked(round, "member_left", node, "member node " + std::to_string(node) + " left (" + reason + ")");
    }
  }
  changed_.notify_all();
}

void GroupHub::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  for (auto& [key, round] : rounds_) {
    fail_locked(round, "stopped", -1, "the coordinator's task stopped");
  }
  changed_.notify_all();
}

}  // namespace ditask::detail
