// SPDX-License-Identifier: MIT
// Worker output: splitting a byte stream into lines, tags, per-worker log files.
#include "output.hpp"

#include <atomic>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include "ditask/error.hpp"

using ditask::launcher::format_tag;
using ditask::launcher::LineSplitter;
using ditask::launcher::WorkerOutput;

namespace fs = std::filesystem;

namespace {

using Lines = std::vector<std::string>;

/// Sends everything written to `fd` into a temporary file for one scope; `text()` reads it.
class CaptureFd {
 public:
  explicit CaptureFd(int fd) : fd_(fd), file_(std::tmpfile()) {
    std::fflush(nullptr);
    saved_ = ::dup(fd_);
    ::dup2(::fileno(file_), fd_);
  }
  ~CaptureFd() {
    restore();
    std::fclose(file_);
  }
  CaptureFd(const CaptureFd&) = delete;
  CaptureFd& operator=(const CaptureFd&) = delete;

  std::string text() {
    restore();
    std::string out;
    ::lseek(::fileno(file_), 0, SEEK_SET);
    char buf[4096];
    for (ssize_t n; (n = ::read(::fileno(file_), buf, sizeof buf)) > 0;) {
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  void restore() {
    if (saved_ >= 0) {
      ::dup2(saved_, fd_);
      ::close(saved_);
      saved_ = -1;
    }
  }
  int fd_;
  std::FILE* file_;
  int saved_ = -1;
};

}  // namespace

TEST_CASE("LineSplitter cuts a stream into lines", "[launcher][output]") {
  LineSplitter s;
  CHECK(s.feed("a\nb\nc") == Lines{"a", "b"});
  CHECK(s.feed("") == Lines{});
  CHECK(s.finish() == Lines{"c"});
  CHECK(s.finish() == Lines{});
}

TEST_CASE("LineSplitter joins a line that arrives in pieces", "[launcher][output]") {
  LineSplitter s;
  CHECK(s.feed("he") == Lines{});
  CHECK(s.feed("llo\nwor") == Lines{"hello"});
  CHECK(s.feed("ld\n") == Lines{"world"});
  CHECK(s.finish() == Lines{});
}

TEST_CASE("LineSplitter keeps empty lines and stray carriage returns", "[launcher][output]") {
  LineSplitter s;
  CHECK(s.feed("\n\nx\r\n") == Lines{"", "", "x\r"});
  CHECK(s.finish() == Lines{});
}

TEST_CASE("LineSplitter cuts a line with no newline at kMaxLine", "[launcher][output]") {
  constexpr std::size_t kMax = LineSplitter::kMaxLine;
  STATIC_REQUIRE(kMax == 1024 * 1024);
  SECTION("3 MiB in one piece") {
    LineSplitter s;
    const Lines lines = s.feed(std::string(3 * kMax, 'x'));
    REQUIRE(lines.size() == 3);
    for (const auto& line : lines) {
      CHECK(line.size() == kMax);
    }
    CHECK(s.finish() == Lines{});
  }
  SECTION("3 MiB and a tail, in 64 KiB reads as from a pipe") {
    LineSplitter s;
    const std::string stream = std::string(3 * kMax + 10, 'y') + "\nnext\n";
    Lines lines;
    for (std::size_t at = 0; at < stream.size(); at += 65536) {
      for (auto& line : s.feed(std::string_view(stream).substr(at, 65536))) {
        lines.push_back(std::move(line));
      }
    }
    REQUIRE(lines.size() == 5);
    CHECK(lines[0].size() == kMax);
    CHECK(lines[1].size() == kMax);
    CHECK(lines[2].size() == kMax);
    CHECK(lines[3] == std::string(10, 'y'));
    CHECK(lines[4] == "next");
    CHECK(s.finish() == Lines{});
  }
  SECTION("a cut line is followed by the rest at the end of the stream") {
    LineSplitter s;
    CHECK(s.feed(std::string(kMax + 3, 'z')).size() == 1);
    CHECK(s.finish() == Lines{"zzz"});
  }
}

TEST_CASE("a line of exactly kMaxLine is one line however the reads fall", "[launcher][output]") {
  constexpr std::size_t kMax = LineSplitter::kMaxLine;
  const std::string line(kMax, 'w');
  LineSplitter together;
  CHECK(together.feed(line + "\nnext\n") == Lines{line, "next"});
  // The same stream, with the newline in the next read (as a pipe may deliver it).
  LineSplitter apart;
  Lines lines = apart.feed(line);
  for (auto& more : apart.feed("\nnext\n")) {
    lines.push_back(std::move(more));
  }
  CHECK(lines.size() == 2);
  CHECK((lines == Lines{line, "next"}));
}

TEST_CASE("format_tag fills in the placeholders", "[launcher][output]") {
  CHECK(format_tag("[node {node}]", 3, 1, 0, 2) == "[node 3]");
  CHECK(format_tag("{node}/{rank}/{local}@{attempt}", 7, 5, 1, 2) == "7/5/1@2");
  CHECK(format_tag("{node}-{node}", 4, 0, 0, 0) == "4-4");
  CHECK(format_tag("{rank}", 0, 12345678901LL, 0, 0) == "12345678901");
  CHECK(format_tag("plain", 1, 2, 3, 4) == "plain");
  CHECK(format_tag("{other} {node", 1, 2, 3, 4) == "{other} {node");
  CHECK(format_tag("", 1, 2, 3, 4).empty());
}

TEST_CASE("WorkerOutput tags each line and keeps the last stderr lines", "[launcher][output]") {
  static std::atomic<int> counter{0};
  const fs::path dir =
      fs::temp_directory_path() /
      ("ditask_output_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string log = (dir / "run" / "attempt_0" / "node_3.log").string();
  std::string err;
  std::vector<std::string> kept;
  {
    WorkerOutput out("[node 3]", log);
    CaptureFd capture(STDERR_FILENO);
    for (int i = 0; i < 15; ++i) {
      out.line(STDERR_FILENO, "line " + std::to_string(i));
    }
    err = capture.text();
    kept.assign(out.last_stderr().begin(), out.last_stderr().end());
    CHECK(out.log_path() == log);
  }
  std::string expected;
  for (int i = 0; i < 15; ++i) {
    expected += "[node 3] line " + std::to_string(i) + "\n";
  }
  CHECK(err == expected);
  REQUIRE(kept.size() == WorkerOutput::kKeptLines);
  CHECK(kept.front() == "line 5");
  CHECK(kept.back() == "line 14");

  std::ifstream in(log);
  std::stringstream file;
  file << in.rdbuf();
  std::string untagged;
  for (int i = 0; i < 15; ++i) {
    untagged += "line " + std::to_string(i) + "\n";
  }
  CHECK(file.str() == untagged);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("WorkerOutput with no tag writes the line as is", "[launcher][output]") {
  std::string text;
  {
    WorkerOutput out("", "");
    CaptureFd capture(STDOUT_FILENO);
    out.line(STDOUT_FILENO, "plain");
    text = capture.text();
    CHECK(out.last_stderr().empty());
  }
  CHECK(text == "plain\n");
}

TEST_CASE("WorkerOutput refuses a log file it cannot write", "[launcher][output]") {
  // Below a regular file no folder can be made, even as root.
  try {
    WorkerOutput out("[node 0]", "/dev/null/logs/node_0.log");
    FAIL("expected a ditask::Error");
  } catch (const ditask::Error& e) {
    CHECK(std::string(e.what()) == "cannot write log file '/dev/null/logs/node_0.log'");
    CHECK_THAT(e.hint(), Catch::Matchers::Contains("--log-dir"));
  }
}
