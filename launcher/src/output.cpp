// SPDX-License-Identifier: MIT
#include "output.hpp"

#include <unistd.h>

#include <filesystem>

#include "ditask/error.hpp"
#include "ditask/runtime/write_all.hpp"
#include "status_line.hpp"

namespace ditask::launcher {

std::vector<std::string> LineSplitter::feed(std::string_view bytes) {
  std::vector<std::string> lines;
  while (!bytes.empty()) {
    auto newline = bytes.find('\n');
    if (newline == 0 && pending_.empty() && just_cut_) {
      bytes.remove_prefix(1);  // the newline of a line already cut at exactly kMaxLine
      just_cut_ = false;
      continue;
    }
    just_cut_ = false;
    if (newline == std::string_view::npos) {
      pending_.append(bytes);
      bytes = {};
    } else {
      pending_.append(bytes.substr(0, newline));
      bytes.remove_prefix(newline + 1);
      lines.push_back(std::move(pending_));
      pending_.clear();
    }
    while (pending_.size() >= kMaxLine) {
      lines.push_back(pending_.substr(0, kMaxLine));
      pending_.erase(0, kMaxLine);
      just_cut_ = pending_.empty();
    }
  }
  return lines;
}

std::vector<std::string> LineSplitter::finish() {
  std::vector<std::string> lines;
  if (!pending_.empty()) {
    lines.push_back(std::move(pending_));
    pending_.clear();
  }
  return lines;
}

WorkerOutput::WorkerOutput(std::string tag, const std::string& log_path)
    : tag_(std::move(tag)), log_path_(log_path) {
  if (log_path.empty()) {
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(log_path).parent_path(), ec);
  log_ = std::make_unique<std::ofstream>(log_path, std::ios::app);
  if (!*log_) {
    throw Error("cannot write log file '" + log_path + "'", "check that --log-dir is writable");
  }
}

void WorkerOutput::line(int fd, const std::string& text) {
  std::string out;
  out.reserve(tag_.size() + text.size() + 2);
  if (!tag_.empty()) {
    out += tag_;
    out += ' ';
  }
  out += text;
  out += '\n';
  write_above_status(fd, out);
  if (log_) {
    *log_ << text << '\n';
    log_->flush();
  }
  if (fd == STDERR_FILENO) {
    last_stderr_.push_back(text);
    if (last_stderr_.size() > kKeptLines) {
      last_stderr_.pop_front();
    }
  }
}

std::string format_tag(const std::string& format, long long node, long long rank, long long local,
                       long long attempt) {
  std::string out = format;
  auto replace = [&out](const std::string& key, long long value) {
    for (auto pos = out.find(key); pos != std::string::npos; pos = out.find(key, pos)) {
      auto text = std::to_string(value);
      out.replace(pos, key.size(), text);
      pos += text.size();
    }
  };
  replace("{node}", node);
  replace("{rank}", rank);
  replace("{local}", local);
  replace("{attempt}", attempt);
  return out;
}

}  // namespace ditask::launcher
