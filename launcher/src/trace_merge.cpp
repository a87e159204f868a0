// SPDX-License-Identifier: MIT
#include "trace_merge.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ditask/error.hpp"

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
  return "node " + std::to_string(w.node_id) + (w.roles.empty() ? "" : " (" + join(w.roles, "+") + ")");
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

void write_trace(const std::string& path, const Plan& plan, const Report& report, const WorkerStatsFolder& parts,
                 const std::vector<PosixProcessSpawner::Mark>& marks) {
  const std::string temporary = path + ".tmp";
  std::ofstream out(temporary, std::ios::trunc);
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
    put(R"({"ph":"M","name":"process_sort_index","pid":)" + pid + R"(,"tid":0,"args":{"sort_index":)" +
        std::to_string(i) + "}}");
    put(R"({"ph":"M","name":"thread_name","pid":)" + pid + R"(,"tid":)" + std::to_string(kLauncherTid) +
        R"(,"args":{"name":"launcher"}})");
  }
  for (const auto& m : marks) {
    put(R"({"ph":"i","s":"t","cat":"launcher","name":)" + json_text(m.what) + R"(,"pid":)" +
        std::to_string(m.node_id) + R"(,"tid":)" + std::to_string(kLauncherTid) + R"(,"ts":)" + micros(m.ts_ns) + "}");
  }
  for (const auto& w : report.workers) {
    for (const auto& attempt : w.ended) {
      std::ifstream in(parts.trace_file_for(w.node_id, attempt.attempt));
      std::string line;
      while (std::getline(in, line)) {
        // The flusher writes whole lines: only a last line without its '\n' (a crash cut it) is
        // left out, and only such a line is parsed to tell.
        if (line.empty() || (in.eof() && !nlohmann::json::accept(line))) {
          continue;
        }
        put(line);
      }
    }
  }
  out << "\n]}\n";
  out.close();
  if (!out) {
    std::remove(temporary.c_str());
    throw Error("cannot write the trace to '" + temporary + "'");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error("cannot write the trace to '" + path + "': " + why);
  }
}

}  // namespace ditask::launcher
