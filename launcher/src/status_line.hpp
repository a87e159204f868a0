// SPDX-License-Identifier: MIT
// The live status line (--status): one line kept at the bottom of the terminal on stderr, above
// which the workers' tagged output and the launcher's own log lines scroll. Drawn with a carriage
// return and "erase line" (ESC [ K), which every terminal since the VT100 understands.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace ditask::launcher {

/// What the status line shows.
struct StatusFigures {
  int running = 0;     ///< workers with a live process
  int restarting = 0;  ///< workers waiting for their restart
  int exited = 0;      ///< workers whose last attempt is over
  double events_per_second = 0;  ///< events received by all running workers
  double calls_per_second = 0;   ///< remote calls made by all running workers
  std::optional<std::int64_t> slowest_node;  ///< the worker with the most events waiting for its handlers
  std::uint64_t slowest_backlog = 0;         ///< how many
  double elapsed_seconds = 0;
};

/// "ditask: 3 running, 1 restarting, 0 exited | 12.3k events/s, 410 calls/s | slowest: node 2
/// (1.2k queued) | 1:05" ("slowest: -" when no worker has events waiting).
std::string format_status(const StatusFigures& figures);

/// --status: true for "on", false for "off", and for "auto" whether `fd` is a terminal.
bool status_wanted(const std::string& mode, int fd);

/// The line itself. While one exists, write_above_status() and the launcher's log lines go above
/// it. Thread: any (one mutex); one at a time per process.
class StatusLine {
 public:
  /// Draws on `fd` (stderr).
  explicit StatusLine(int fd);
  /// Erases the line: the terminal is left as if it had never been there.
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  /// Replaces the text (cut to the terminal's width).
  void show(std::string text);
  /// Writes whole lines `bytes` to `fd` above the line.
  void write_above(int fd, std::string_view bytes);

 private:
  void draw_locked();
  void erase_locked();

  int fd_;
  std::mutex mutex_;
  std::string text_;
};

/// Writes whole lines to `fd`: above the status line when one is shown, else straight.
void write_above_status(int fd, std::string_view bytes);

}  // namespace ditask::launcher
