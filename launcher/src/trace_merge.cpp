// SPDX-License-Identifier: MIT
#include "trace_merge.hpp"

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ditask/runtime/replace_file.hpp"
#include "ditask/runtime/trace_part.hpp"

namespace ditask::launcher {
namespace {

constexpr int kLauncherTid = 0;  // the launcher's thread in each worker's process track

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : separator) + item;
  }
  return out;
}

/// "node 3 (learner+evaluator)" or "node 3".
std::string process_name(const WorkerPlan& w) {
  return "node " + std::to_string(w.node_id) +
         (w.roles.empty() ? "" : " (" + join(w.roles, "+") + ")");
}

/// `text` as a JSON string; bytes that are not UTF-8 become U+FFFD.
std::string json_text(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string micros(std::uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return text;
}

}  // namespace

void write_trace(const std::string& path, const Plan& plan, const Report& report,
                 const WorkerStatsFolder& parts,
                 const std::vector<PosixProcessSpawner::Mark>& marks) {
  detail::replace_file(path, "the trace", [&](std::ofstream& out) {
    out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    bool first = true;
    auto put = [&](const std::string& line) {
      out << (first ? "" : ",\n") << line;
      first = false;
    };
    for (std::size_t i = 0; i < plan.workers.size(); ++i) {
      const auto& w = plan.workers[i];
      const std::string pid = std::to_string(w.node_id);
      put(R"({"ph":"M","name":"process_name","pid":)" + pid + R"(,"tid":0,"args":{"name":)" +
          json_text(process_name(w)) + "}}");
      put(R"({"ph":"M","name":"process_sort_index","pid":)" + pid +
          R"(,"tid":0,"args":{"sort_index":)" + std::to_string(i) + "}}");
      put(R"({"ph":"M","name":"thread_name","pid":)" + pid + R"(,"tid":)" +
          std::to_string(kLauncherTid) + R"(,"args":{"name":"launcher"}})");
    }
    for (const auto& m : marks) {
      put(R"({"ph":"i","s":"t","cat":"launcher","name":)" + json_text(m.what) + R"(,"pid":)" +
          std::to_string(m.node_id) + R"(,"tid":)" + std::to_string(kLauncherTid) + R"(,"ts":)" +
          micros(m.ts_ns) + "}");
    }
    for (const auto& w : report.workers) {
      detail::trace::PartPlacement placement;
      placement.pid = w.node_id;
      placement.first_tid = kLauncherTid + 1;
      for (const auto& attempt : w.ended) {
        // Each attempt's threads get tracks of their own, after the previous attempt's.
        placement.thread_suffix =
            attempt.attempt == 0 ? "" : " (attempt " + std::to_string(attempt.attempt) + ")";
        placement.first_tid = detail::trace::part_to_json(
            parts.trace_file_for(w.node_id, attempt.attempt), placement, put);
      }
    }
    out << "\n]}\n";
  });
}

}  // namespace ditask::launcher
