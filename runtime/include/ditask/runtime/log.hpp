// SPDX-License-Identifier: MIT
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include "ditask/export.hpp"

namespace ditask::log {

/// Severity, most severe first.
enum class Level { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

/// True when lines of `level` are written. The threshold comes from set_level(), else from
/// DITASK_LOG_LEVEL at first use, else `warn`. Thread: any.
DITASK_API bool enabled(Level level) noexcept;
/// Sets the threshold. Thread: any.
DITASK_API void set_level(Level level) noexcept;
/// Parses "error|warn|info|debug|trace". Errors: throws ditask::Error listing the choices.
DITASK_API Level parse_level(std::string_view name);
/// Sets the process tag shown in each line (`launcher`, `node 3`); default `ditask`. Thread: any.
DITASK_API void set_tag(std::string tag);
/// Writes each finished line (with its '\n') instead of the write(2) to stderr; null restores that.
/// The launcher's live status line uses it to keep itself below. Thread: set before other threads log.
using LineWriter = void (*)(const std::string& line);
DITASK_API void set_line_writer(LineWriter writer) noexcept;

/// Builds one log line and writes it with a single write(2) when destroyed, so lines from many
/// processes sharing stderr never interleave. Format: `12:03:04.512 node 3 warn mesh: text`.
class DITASK_API Line {
 public:
  Line(Level level, std::string_view area);
  ~Line();
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  /// Appends anything an ostream can print.
  template <class T>
  Line& operator<<(const T& value) {
    out_ << value;
    return *this;
  }

 private:
  std::ostringstream out_;
};

}  // namespace ditask::log

/// `DITASK_LOG(warn, "mesh") << "text";` costs nothing when `warn` is disabled.
#define DITASK_LOG(level, area)                                  \
  if (!::ditask::log::enabled(::ditask::log::Level::level)) {   \
  } else                                                         \
    ::ditask::log::Line(::ditask::log::Level::level, area)
