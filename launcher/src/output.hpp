// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <deque>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ditask::launcher {

/// Cuts a byte stream into lines ('\n'); a line longer than kMaxLine is cut there, so a worker
/// that never prints a newline cannot exhaust the launcher's memory.
class LineSplitter {
 public:
  static constexpr std::size_t kMaxLine = 1 << 20;
  /// Appends `bytes`; returns the lines completed by them, without their '\n'.
  std::vector<std::string> feed(std::string_view bytes);
  /// The unterminated rest at end of stream, if any.
  std::vector<std::string> finish();

 private:
  std::string pending_;
  bool just_cut_ = false;  // the last byte fed completed a cut of exactly kMaxLine
};

/// Where one worker's output goes: the launcher's stdout/stderr (tagged, one write per line,
/// so lines of different workers never mix) and, optionally, a log file. Keeps the last
/// stderr lines for the failure summary. Thread: the launcher's io thread.
class WorkerOutput {
 public:
  static constexpr std::size_t kKeptLines = 10;

  /// `tag` is prefixed (with a space) when not empty; `log_path` may be empty.
  WorkerOutput(std::string tag, const std::string& log_path);
  /// Writes one stdout (fd 1) or stderr (fd 2) line.
  void line(int fd, const std::string& text);
  /// The last stderr lines, oldest first.
  const std::deque<std::string>& last_stderr() const { return last_stderr_; }
  /// The log file path, or empty.
  const std::string& log_path() const { return log_path_; }

 private:
  std::string tag_;
  std::string log_path_;
  std::unique_ptr<std::ofstream> log_;
  std::deque<std::string> last_stderr_;
};

/// Expands {node}, {rank}, {local} and {attempt} in a --tag-format.
std::string format_tag(const std::string& format, long long node, long long rank, long long local,
                       long long attempt);

}  // namespace ditask::launcher
