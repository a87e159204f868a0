// SPDX-License-Identifier: MIT
#include "summary_json.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ditask/error.hpp"
#include "ditask/runtime/replace_file.hpp"
#include "ditask/launcher/group_signal.hpp"

namespace ditask::launcher {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const char* cause_name(StopCause cause) {
  switch (cause) {
    case StopCause::failure: return "failure";
    case StopCause::signal: return "signal";
    case StopCause::timeout: return "timeout";
    default: return "none";
  }
}

json exit_code_of(int status) { return WIFEXITED(status) ? json(WEXITSTATUS(status)) : json(nullptr); }

json signal_of(int status) { return WIFSIGNALED(status) ? json(signal_name(WTERMSIG(status))) : json(nullptr); }

/// Adds the numbers of `part` to those of `total` (both {"name": number} objects).
void add_counts(json& total, const json& part) {
  if (total.is_null()) {
    total = part;
    return;
  }
  for (const auto& [key, value] : part.items()) {
    if (value.is_number_unsigned()) {
      total[key] = total.value(key, std::uint64_t{0}) + value.get<std::uint64_t>();
    }
  }
}

/// "succeeded", "failed", "stopped" (by the launcher), "running" (gave up on it) or "not started".
const char* outcome_of(const WorkerRecord& w) {
  if (w.still_running) {
    return "running";
  }
  if (w.ended.empty()) {
    return "not started";
  }
  const int status = w.ended.back().status;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return "succeeded";
  }
  return w.stopped_by_launcher ? "stopped" : "failed";
}

json worker_json(const WorkerRecord& w, const WorkerPlan& plan, const WorkerStatsFolder& stats) {
  json attempts = json::array();
  json events;
  json calls;
  json user;
  json system;
  json peak;
  for (const auto& a : w.ended) {
    json entry = {{"attempt", a.attempt},
                  {"pid", a.pid < 0 ? json(nullptr) : json(a.pid)},
                  {"exit_code", exit_code_of(a.status)},
                  {"signal", signal_of(a.status)},
                  {"cpu_user_seconds", nullptr},
                  {"cpu_system_seconds", nullptr},
                  {"peak_rss_bytes", nullptr},
                  {"events", nullptr},
                  {"calls", nullptr}};
    if (a.usage) {
      entry["cpu_user_seconds"] = a.usage->user_seconds;
      entry["cpu_system_seconds"] = a.usage->system_seconds;
      entry["peak_rss_bytes"] = a.usage->peak_rss_bytes;
      user = user.is_null() ? a.usage->user_seconds : user.get<double>() + a.usage->user_seconds;
      system = system.is_null() ? a.usage->system_seconds : system.get<double>() + a.usage->system_seconds;
      peak = peak.is_null() ? a.usage->peak_rss_bytes : std::max(peak.get<std::int64_t>(), a.usage->peak_rss_bytes);
    }
    if (const json own = stats.read(w.node_id, a.attempt); own.is_object()) {
      entry["events"] = own.value("events", json());
      entry["calls"] = own.value("calls", json());
      add_counts(events, entry["events"]);
      add_counts(calls, entry["calls"]);
    }
    attempts.push_back(std::move(entry));
  }
  const bool ended = !w.ended.empty() && !w.still_running;
  return {{"node_id", w.node_id},
          {"rank", plan.rank},
          {"local_id", plan.local_id},
          {"roles", plan.roles},
          {"outcome", outcome_of(w)},
          {"exit_code", ended ? exit_code_of(w.ended.back().status) : json(nullptr)},
          {"signal", ended ? signal_of(w.ended.back().status) : json(nullptr)},
          {"restarts", w.attempt},
          {"stopped_by_launcher", w.stopped_by_launcher},
          {"cpu_user_seconds", user},
          {"cpu_system_seconds", system},
          {"peak_rss_bytes", peak},
          {"events", events},
          {"calls", calls},
          {"attempts", std::move(attempts)}};
}

json failure_json(const Failure& f) {
  return {{"node_id", f.node_id},
          {"pid", f.pid < 0 ? json(nullptr) : json(f.pid)},
          {"attempt", f.attempt},
          {"exit_code", exit_code_of(f.status)},
          {"signal", signal_of(f.status)},
          {"description", describe_failure(f)},
          {"last_stderr", f.last_stderr},
          {"log_path", f.log_path.empty() ? json(nullptr) : json(f.log_path)}};
}

std::string replaced(std::string text, const std::string& key, const std::string& value) {
  for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) {
    text.replace(at, key.size(), value);
  }
  return text;
}

}  // namespace

WorkerStatsFolder::WorkerStatsFolder() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ditask-stats-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error("cannot make a folder for the workers' counters and traces (--summary-json, --trace) as '" + pattern +
                    "': " + std::strerror(errno),
                "set TMPDIR to a writable folder");
  }
  path_ = pattern;
}

WorkerStatsFolder::~WorkerStatsFolder() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::string WorkerStatsFolder::file_for(std::int64_t node_id, int attempt) const {
  return path_ + "/node_" + std::to_string(node_id) + ".attempt_" + std::to_string(attempt) + ".json";
}

std::string WorkerStatsFolder::trace_file_for(std::int64_t node_id, int attempt) const {
  return path_ + "/node_" + std::to_string(node_id) + ".attempt_" + std::to_string(attempt) + ".trace";
}

json WorkerStatsFolder::read(std::int64_t node_id, int attempt, bool live) const {
  std::ifstream in(file_for(node_id, attempt) + (live ? ".live" : ""));
  if (!in) {
    return nullptr;
  }
  json own = json::parse(in, nullptr, false);
  return own.is_discarded() ? json(nullptr) : own;
}

json summary_json(const Report& report, const Plan& plan, double elapsed_seconds, const WorkerStatsFolder& stats) {
  json workers = json::array();
  for (std::size_t i = 0; i < report.workers.size() && i < plan.workers.size(); ++i) {
    workers.push_back(worker_json(report.workers[i], plan.workers[i], stats));
  }
  return {{"format", "ditask-summary/1"},
          {"run_id", plan.run_id},
          {"platform", plan.platform},
          {"world_size", plan.world_size},
          {"exit_code", exit_code(report)},
          {"elapsed_seconds", elapsed_seconds},
          {"stop",
           {{"cause", cause_name(report.cause)},
            {"signal", report.stopping && report.signal > 0 ? json(signal_name(report.signal)) : json(nullptr)}}},
          {"failure", report.failure ? failure_json(*report.failure) : json(nullptr)},
          {"also_failed", report.also_failed},
          {"workers", std::move(workers)}};
}

std::string summary_path(const std::string& pattern, const Plan& plan) {
  const std::string first = plan.workers.empty() ? "0" : std::to_string(plan.workers.front().node_id);
  return replaced(replaced(pattern, "{node}", first), "{run}", plan.run_id);
}

void check_output_file(const std::string& flag, const std::string& path) {
  const fs::path file(path);
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    throw Error(flag + " '" + path + "' is a folder", "name a file, e.g. " + (file / "summary.json").string());
  }
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec)) {
    throw Error(flag + " '" + path + "': no folder '" + folder.string() + "'",
                "create it first (mkdir -p " + folder.string() + ")");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw Error(flag + " '" + path + "': cannot write in '" + folder.string() + "': " + std::strerror(errno),
                "name a file in a folder you can write");
  }
}

void write_summary_json(const std::string& path, const json& summary) {
  // A worker's stderr lines may be any bytes: what is not UTF-8 becomes U+FFFD, never an exception.
  const std::string text = summary.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  detail::replace_file(path, "the summary", [&](std::ofstream& out) { out << text; });
}

}  // namespace ditask::launcher
