// SPDX-License-Identifier: MIT
// The worker's trace recorder: what its part file holds after a session, every record accounted
// for (written, or counted as dropped when a ring was full), names escaped, tracks named.
#include "trace/trace.hpp"

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"

namespace {

std::vector<nlohmann::json> lines_of(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

}  // namespace

TEST_CASE("trace: a session writes every record or counts it as dropped, with named tracks and escaped names",
          "[trace]") {
  namespace trace = ditask::detail::trace;
  ditask::test::TempDir dir;
  const std::string path = dir.file("part.trace");
  ::setenv("DITASK_TRACE_FILE", path.c_str(), 1);
  ::setenv("DITASK_NODE_ID", "7", 1);
  ::setenv("DITASK_ATTEMPT", "2", 1);
  constexpr int kInstants = 100'000;  // more than a ring holds: some may be dropped, none lost silently
  {
    trace::Session session;
    ::unsetenv("DITASK_TRACE_FILE");
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
  }
  ::unsetenv("DITASK_NODE_ID");
  ::unsetenv("DITASK_ATTEMPT");
  CHECK_FALSE(trace::on());
  const auto lines = lines_of(path);
  long ticks = 0;
  long dropped = 0;
  int begins = 0;
  int ends = 0;
  std::set<std::int64_t> named;
  for (const auto& e : lines) {
    CHECK(e.at("pid") == 7);
    CHECK(e.at("tid").get<std::int64_t>() > 2000);  // attempt 2's threads
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
