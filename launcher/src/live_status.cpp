// SPDX-License-Identifier: MIT
#include "live_status.hpp"

#include <algorithm>

namespace ditask::launcher {

LiveStatus::LiveStatus(const Plan& plan, const Supervision& rules, const WorkerStatsFolder& stats)
    : plan_(plan), rules_(rules), stats_(stats) {}

StatusFigures LiveStatus::sample() {
  const auto now = std::chrono::steady_clock::now();
  const double interval = std::chrono::duration<double>(now - last_time_).count();
  last_time_ = now;
  StatusFigures f;
  const auto counts = rules_.counts();
  f.running = counts.running;
  f.restarting = counts.restarting;
  f.exited = counts.done;
  f.elapsed_seconds = std::chrono::duration<double>(now - started_).count();
  std::uint64_t received = 0;
  std::uint64_t calls = 0;
  std::map<std::pair<std::size_t, int>, Last> seen;
  for (std::size_t i = 0; i < plan_.workers.size(); ++i) {
    if (!rules_.alive(i)) {
      continue;
    }
    const int attempt = rules_.attempt(i);
    const auto own = stats_.read(plan_.workers[i].node_id, attempt, true);
    if (!own.is_object()) {
      continue;  // not written yet
    }
    const auto events = own.value("events", nlohmann::ordered_json::object());
    const auto made = own.value("calls", nlohmann::ordered_json::object());
    if (!events.is_object() || !made.is_object()) {
      continue;
    }
    Last now_counts{events.value("received", std::uint64_t{0}), made.value("made", std::uint64_t{0})};
    // A worker's first sample (or first after a restart) counts from zero, as its counters do.
    const auto before = last_.find({i, attempt});
    const Last base = before != last_.end() ? before->second : Last{};
    received += now_counts.received - std::min(base.received, now_counts.received);
    calls += now_counts.calls - std::min(base.calls, now_counts.calls);
    seen[{i, attempt}] = now_counts;
    const auto backlog = own.value("backlog", std::uint64_t{0});
    if (backlog > f.slowest_backlog) {
      f.slowest_backlog = backlog;
      f.slowest_node = plan_.workers[i].node_id;
    }
  }
  last_ = std::move(seen);
  if (interval > 0) {
    f.events_per_second = static_cast<double>(received) / interval;
    f.calls_per_second = static_cast<double>(calls) / interval;
  }
  return f;
}

}  // namespace ditask::launcher
