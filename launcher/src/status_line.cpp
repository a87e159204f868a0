// SPDX-License-Identifier: MIT
#include "status_line.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "ditask/runtime/log.hpp"
#include "ditask/runtime/write_all.hpp"

namespace ditask::launcher {
namespace {

std::atomic<StatusLine*> g_line{nullptr};

constexpr std::string_view kErase = "\r\x1b[K";  // to column 0, erase to the end of the line

/// "950", "12.3k", "4.1M".
std::string human(double value) {
  char text[32];
  if (value < 1000) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else if (value < 1e6) {
    std::snprintf(text, sizeof text, "%.1fk", value / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.1fM", value / 1e6);
  }
  return text;
}

/// "0:07", "12:34", "1:02:03".
std::string clock_text(double seconds) {
  const auto total = static_cast<long long>(seconds < 0 ? 0 : seconds);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600, (total / 60) % 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
  }
  return text;
}

void log_above(const std::string& line) { write_above_status(STDERR_FILENO, line); }

}  // namespace

std::string format_status(const StatusFigures& f) {
  std::string text = "ditask: " + std::to_string(f.running) + " running, " + std::to_string(f.restarting) +
                     " restarting, " + std::to_string(f.exited) + " exited | " + human(f.events_per_second) +
                     " events/s, " + human(f.calls_per_second) + " calls/s | slowest: ";
  if (f.slowest_node) {
    text += "node " + std::to_string(*f.slowest_node) + " (" + human(static_cast<double>(f.slowest_backlog)) +
            " queued)";
  } else {
    text += "-";
  }
  return text + " | " + clock_text(f.elapsed_seconds);
}

bool status_wanted(const std::string& mode, int fd) {
  if (mode == "on") {
    return true;
  }
  if (mode == "off") {
    return false;
  }
  return ::isatty(fd) == 1;
}

StatusLine::StatusLine(int fd) : fd_(fd) {
  g_line.store(this);
  log::set_line_writer(&log_above);
}

StatusLine::~StatusLine() {
  log::set_line_writer(nullptr);
  g_line.store(nullptr);
  std::lock_guard lock(mutex_);
  erase_locked();
}

void StatusLine::show(std::string text) {
  std::lock_guard lock(mutex_);
  text_ = std::move(text);
  draw_locked();
}

void StatusLine::write_above(int fd, std::string_view bytes) {
  std::lock_guard lock(mutex_);
  erase_locked();
  detail::write_all(fd, bytes);
  draw_locked();
}

void StatusLine::draw_locked() {
  std::string out(kErase);
  std::string_view text = text_;
  winsize size{};
  if (::ioctl(fd_, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 && text.size() >= size.ws_col) {
    text = text.substr(0, size.ws_col - 1u);  // never wrap: a wrapped line could not be erased
  }
  out += text;
  detail::write_all(fd_, out);
}

void StatusLine::erase_locked() { detail::write_all(fd_, kErase); }

void write_above_status(int fd, std::string_view bytes) {
  if (StatusLine* line = g_line.load()) {
    line->write_above(fd, bytes);
    return;
  }
  detail::write_all(fd, bytes);
}

}  // namespace ditask::launcher
