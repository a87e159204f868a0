// SPDX-License-Identifier: MIT
#include "ditask/runtime/log.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "ditask/error.hpp"
#include "ditask/runtime/write_all.hpp"

namespace ditask::log {
namespace {

constexpr std::array<std::string_view, 5> kLevelNames = {"error", "warn", "info", "debug", "trace"};
constexpr int kUnset = -1;

std::atomic<int> g_level{kUnset};
std::mutex g_tag_mutex;
std::string g_tag = "ditask";  // guarded by g_tag_mutex

int level_from_env() noexcept {
  const char* env = std::getenv("DITASK_LOG_LEVEL");
  if (env != nullptr) {
    for (std::size_t i = 0; i < kLevelNames.size(); ++i) {
      if (kLevelNames[i] == env) {
        return static_cast<int>(i);
      }
    }
  }
  return static_cast<int>(Level::warn);
}

std::string timestamp() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto t = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  localtime_r(&t, &tm);
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms));
  return buf.data();
}

}  // namespace

bool enabled(Level level) noexcept {
  int current = g_level.load(std::memory_order_relaxed);
  if (current == kUnset) {
    current = level_from_env();
    g_level.store(current, std::memory_order_relaxed);
  }
  return static_cast<int>(level) <= current;
}

void set_level(Level level) noexcept { g_level.store(static_cast<int>(level)); }

Level parse_level(std::string_view name) {
  for (std::size_t i = 0; i < kLevelNames.size(); ++i) {
    if (kLevelNames[i] == name) {
      return static_cast<Level>(i);
    }
  }
  throw Error("unknown log level '" + std::string(name) + "'",
              "choose one of: error, warn, info, debug, trace");
}

namespace {
std::atomic<LineWriter> g_line_writer{nullptr};
}  // namespace

void set_line_writer(LineWriter writer) noexcept { g_line_writer.store(writer); }

void set_tag(std::string tag) {
  std::lock_guard lock(g_tag_mutex);
  g_tag = std::move(tag);
}

Line::Line(Level level, std::string_view area) {
  std::string tag;
  {
    std::lock_guard lock(g_tag_mutex);
    tag = g_tag;
  }
  out_ << timestamp() << ' ' << tag << ' ' << kLevelNames[static_cast<std::size_t>(level)] << ' '
       << area << ": ";
}

Line::~Line() {
  try {
    out_ << '\n';
    if (const LineWriter writer = g_line_writer.load()) {
      writer(out_.str());
    } else {
      detail::write_all(STDERR_FILENO, out_.str());
    }
  } catch (...) {
    // A logger must never throw from a destructor.
  }
}

}  // namespace ditask::log
