// SPDX-License-Identifier: MIT
// The worker's trace recorder: what its part file holds after a session, every record accounted
// for (written, or counted as dropped when a ring was full), names escaped, tracks named.
#include "trace/trace.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"

namespace {

/// The part at `path` as the launcher's merge formats it, as node 7's threads from 1.
std::vector<nlohmann::json> lines_of(const std::string& path) {
  std::vector<nlohmann::json> out;
  ditask::detail::trace::PartPlacement placement;
  placement.pid = 7;
  ditask::detail::trace::part_to_json(path, placement,
                                      [&](const std::string& line) { out.push_back(nlohmann::json::parse(line)); });
  return out;
}

/// Runs `body` inside a trace session that writes its part to `path`.
template <typename Body>
void traced(const std::string& path, Body body) {
  ::setenv("DITASK_TRACE_FILE", path.c_str(), 1);
  const ditask::detail::trace::Session session;
  ::unsetenv("DITASK_TRACE_FILE");
  body();
}

}  // namespace

TEST_CASE("trace: a session writes every record or counts it as dropped, with named tracks and escaped names",
          "[trace]") {
  namespace trace = ditask::detail::trace;
  ditask::test::TempDir dir;
  const std::string path = dir.file("part.trace");
  constexpr int kInstants = 100'000;  // more than a ring holds: some may be dropped, none lost silently
  traced(path, [] {
    REQUIRE(trace::on());
    std::thread other([] {
      trace::name_thread("worker");
      const trace::Span span(trace::Category::event, "quote \" and \\ and \n", 3);
    });
    other.join();
    const auto name = trace::name_id("tick");
    for (int i = 0; i < kInstants; ++i) {
      trace::record(trace::Phase::instant, trace::Category::event, name);
    }
  });
  CHECK_FALSE(trace::on());
  const auto lines = lines_of(path);
  long ticks = 0;
  long dropped = 0;
  int begins = 0;
  int ends = 0;
  std::set<std::int64_t> named;
  for (const auto& e : lines) {
    CHECK(e.at("pid") == 7);
    CHECK(e.at("tid").get<std::int64_t>() >= 1);
    const std::string ph = e.at("ph");
    if (ph == "M") {
      named.insert(e.at("tid").get<std::int64_t>());
    } else if (ph == "i" && e.at("name") == "tick") {
      ++ticks;
    } else if (ph == "i" && e.at("cat") == "trace") {
      dropped += std::stol(e.at("name").get<std::string>().substr(std::string("ring full: ").size()));
    } else if (ph == "B") {
      ++begins;
      CHECK(e.at("name") == "quote \" and \\ and \n");
      CHECK(e.at("args").at("peer") == 3);
    } else if (ph == "E") {
      ++ends;
    }
  }
  CHECK(ticks + dropped == kInstants);
  CHECK(ticks > 0);
  CHECK(begins == 1);
  CHECK(ends == 1);
  CHECK(named.size() == 2);  // the entry thread and "worker"
}

TEST_CASE("trace: without DITASK_TRACE_FILE nothing is recorded", "[trace]") {
  namespace trace = ditask::detail::trace;
  ::unsetenv("DITASK_TRACE_FILE");
  trace::Session session;
  CHECK_FALSE(trace::on());
  const trace::Span span(trace::Category::task, "step");  // a no-op
}

TEST_CASE("trace: a thread named after its first records were flushed keeps its last name", "[trace]") {
  namespace trace = ditask::detail::trace;
  ditask::test::TempDir dir;
  const std::string path = dir.file("part.trace");
  traced(path, [] {
    std::thread other([] {
      trace::record(trace::Phase::instant, trace::Category::task, "before");
      trace::flush_now();          // the track is told as "thread N"...
      trace::name_thread("late");  // ...then named
      trace::record(trace::Phase::instant, trace::Category::task, "after");
    });
    other.join();
  });
  std::map<std::int64_t, std::string> names;
  std::int64_t tid_of_after = -1;
  for (const auto& e : lines_of(path)) {
    if (e.at("ph") == "M") {
      names[e.at("tid")] = e.at("args").at("name");
    } else if (e.at("name") == "after") {
      tid_of_after = e.at("tid");
    }
  }
  REQUIRE(names.count(tid_of_after) == 1);
  CHECK(names.at(tid_of_after).rfind("late ", 0) == 0);
  CHECK(names.size() == 2);  // "entry N" and "late N", one metadata line each
}

TEST_CASE("trace: a part cut by a crash keeps its whole records, and names that are not UTF-8 stay valid JSON",
          "[trace]") {
  namespace trace = ditask::detail::trace;
  ditask::test::TempDir dir;
  const std::string path = dir.file("part.trace");
  traced(path, [] {
    for (int i = 0; i < 100; ++i) {
      trace::record(trace::Phase::instant, trace::Category::event, "bad \xff name");
    }
  });
  const auto whole = lines_of(path);
  REQUIRE(whole.size() == 101);  // 100 instants, the entry thread's name
  CHECK(whole.front().at("name") == "bad \xef\xbf\xbd name");
  // A crash cut the last record in half: the 99 before it remain.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 16);
  const auto cut = lines_of(path);
  CHECK(cut.size() == 100);  // 99 instants and the thread's name
  CHECK(cut.back().at("ph") == "M");
  const std::string magic_only = dir.file("empty.trace");
  std::ofstream(magic_only) << "not a part";
  CHECK(lines_of(magic_only).empty());
  CHECK(lines_of(dir.file("missing.trace")).empty());
}
