// SPDX-License-Identifier: MIT
#include "group_hub.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "../transport/inline_write.hpp"

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

std::string left_text(std::int64_t node, const std::string& reason) {
  return "member node " + std::to_string(node) + " left (" + reason + ")";
}

// The members and attempts of one view of a group (an arrival, or an open round).
struct View {
  const std::vector<std::int64_t>& members;
  const std::vector<std::int64_t>& attempts;
};

// Adds the members of `view` and their attempts (the first view's, where known) to `members`.
void note_view(std::set<std::int64_t>& members, std::map<std::int64_t, std::int64_t>& attempts, View view) {
  const bool known = view.attempts.size() == view.members.size();
  for (std::size_t i = 0; i < view.members.size(); ++i) {
    members.insert(view.members[i]);
    if (known) {
      attempts.emplace(view.members[i], view.attempts[i]);
    }
  }
}

// Whether `view` could be of the formation whose attempts are `attempts`: no member of it came
// with another attempt (a formation after a restart is another formation, not a disagreement).
bool same_formation(const std::map<std::int64_t, std::int64_t>& attempts, View view) {
  if (view.attempts.size() != view.members.size()) {
    return true;
  }
  for (std::size_t i = 0; i < view.members.size(); ++i) {
    auto it = attempts.find(view.members[i]);
    if (it != attempts.end() && it->second != view.attempts[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string group_key(const std::string& group, const std::vector<std::int64_t>& attempts) {
  return group + "#" + node_list_text(attempts);
}

void GroupHub::set_attempt(std::int64_t attempt) {
  std::lock_guard lock(mutex_);
  attempt_ = attempt;
}

std::uint64_t GroupHub::next_round(const std::string& key) {
  std::lock_guard lock(mutex_);
  return ++next_[key];
}

std::int64_t GroupHub::departed_locked(const std::vector<std::int64_t>& members,
                                       const std::vector<std::int64_t>& attempts) const {
  for (std::size_t i = 0; i < members.size(); ++i) {
    auto gone = left_.find(members[i]);
    // Attempts unknown: any departure of the node counts.
    if (gone != left_.end() && (attempts.size() != members.size() || attempts[i] <= gone->second.attempt)) {
      return members[i];
    }
  }
  return -1;
}

void GroupHub::fail_locked(Round& round, const char* kind, std::int64_t node, const std::string& message) {
  if (round.done) {
    return;
  }
  round.done = true;
  round.answer = failure(kind, node, message);
}

GroupHub::Disagreement& GroupHub::disagree_locked(const Numbered& at, const nlohmann::json& answer,
                                                  const std::vector<std::int64_t>& members,
                                                  const std::vector<std::int64_t>& attempts) {
  auto [it, fresh] = disagreements_.try_emplace(at);
  if (!fresh && !same_formation(it->second.attempts, View{members, attempts})) {
    it->second = Disagreement{};  // one of an earlier formation (before a restart): this one replaces it
    fresh = true;
  }
  if (fresh) {
    it->second.answer = answer;
    disagreement_order_.push_back(at);
    while (disagreement_order_.size() > kEndedKept) {  // the newest (`at`) stays
      disagreements_.erase(disagreement_order_.front());
      disagreement_order_.pop_front();
    }
  }
  return it->second;
}

void GroupHub::fail_numbered_locked(const Numbered& at, Disagreement& d) {
  for (auto& [key, round] : rounds_) {
    if (round.done || key.second != at.second || round.group != at.first ||
        !same_formation(d.attempts, View{round.state.members(), round.attempts})) {
      continue;
    }
    round.done = true;
    round.answer = d.answer;
    note_round(d, round);
  }
  changed_.notify_all();
}

void GroupHub::note_round(Disagreement& d, const Round& round) {
  note_view(d.members, d.attempts, View{round.state.members(), round.attempts});
  const auto missing = round.state.missing();
  for (auto member : round.state.members()) {
    if (std::find(missing.begin(), missing.end(), member) == missing.end()) {
      d.arrived.insert(member);
    }
  }
}

nlohmann::json GroupHub::answer_disagreement_locked(const Numbered& at, Disagreement& d, std::int64_t from) {
  d.arrived.insert(from);
  nlohmann::json answer = d.answer;
  if (std::includes(d.arrived.begin(), d.arrived.end(), d.members.begin(), d.members.end())) {
    disagreements_.erase(at);  // every member any view named has its answer
  }
  return answer;
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
  const Key key{group_key(group, arrival.attempts), round_no};
  std::unique_lock lock(mutex_);
  if (stopping_) {
    return failure("stopped", -1, "the coordinator's task is stopping");
  }
  const bool attempts_known = !arrival.members.empty() && arrival.attempts.size() == arrival.members.size();
  if (attempts_known && arrival.attempts.front() != attempt_) {
    // The member formed its group with another incarnation of this node: the rounds that
    // incarnation coordinated are gone with it, and waiting here would never end.
    const auto coordinator = arrival.members.front();
    return failure("member_left", coordinator,
                   "its coordinator, member node " + std::to_string(coordinator) +
                       ", restarted since the group formed (attempt " + std::to_string(arrival.attempts.front()) +
                       " then, " + std::to_string(attempt_) + " now)");
  }
  if (auto ended = ended_.find(key); ended != ended_.end()) {
    return ended->second;  // the round failed before this member came
  }
  const Numbered numbered{group, round_no};
  const View view{arrival.members, arrival.attempts};
  if (auto found = disagreements_.find(numbered);
      found != disagreements_.end() && same_formation(found->second.attempts, view)) {
    note_view(found->second.members, found->second.attempts, view);
    return answer_disagreement_locked(numbered, found->second, from);
  }
  for (const auto& [other_key, other] : rounds_) {
    if (other_key == key || other.done || other_key.second != round_no || other.group != group ||
        other.state.members() == arrival.members) {
      continue;
    }
    std::map<std::int64_t, std::int64_t> other_attempts;
    std::set<std::int64_t> other_members;
    note_view(other_members, other_attempts, View{other.state.members(), other.attempts});
    if (!same_formation(other_attempts, view)) {
      continue;
    }
    // A round of this group and number that another member opened with other members.
    Disagreement& d = disagree_locked(
        numbered,
        failure("mismatch", -1,
                "node " + std::to_string(from) + " sees the members " + bracketed_node_list_text(arrival.members) +
                    ", another member " + bracketed_node_list_text(other.state.members())),
        arrival.members, arrival.attempts);
    note_view(d.members, d.attempts, view);
    fail_numbered_locked(numbered, d);
    return answer_disagreement_locked(numbered, d, from);
  }
  auto it = rounds_.try_emplace(key, group, arrival).first;
  Round& round = it->second;
  ++round.waiters;
  if (!round.done) {
    if (auto member = departed_locked(round.state.members(), round.attempts); member >= 0) {
      fail_locked(round, "member_left", member, left_text(member, left_.at(member).reason));
    }
  }
  if (!round.done) {
    const std::vector<std::int64_t> members = arrival.members;
    const std::vector<std::int64_t> attempts = arrival.attempts;
    if (auto misfit = round.state.add(from, std::move(arrival))) {
      fail_locked(round, "mismatch", -1, *misfit);
      // Rounds of this number opened with other views of the group fail with it.
      Disagreement& d = disagree_locked(numbered, round.answer, members, attempts);
      note_view(d.members, d.attempts, View{members, attempts});
      d.arrived.insert(from);
      note_round(d, round);
      fail_numbered_locked(numbered, d);
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
  if (!round.done) {
    lock.unlock();
    before_wait("a group operation");  // the other members may wait for what this thread held
    lock.lock();
  }
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

void GroupHub::node_left(std::int64_t node, std::int64_t attempt, const std::string& reason) {
  std::lock_guard lock(mutex_);
  left_[node] = Left{attempt, reason};
  for (auto& [key, round] : rounds_) {
    if (departed_locked(round.state.members(), round.attempts) == node) {
      fail_locked(round, "member_left", node, left_text(node, reason));
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
