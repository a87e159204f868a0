// SPDX-License-Identifier: MIT
// --trace: one Chrome trace of a 4-worker rpc_cartpole run, validated as a viewer reads it: a
// named process per worker, a named thread per track, every span closed on its own thread, every
// call in flight ended, every call's arrow from caller to callee paired.
#include <map>
#include <set>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ditask/runtime/trace_part.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;
using nlohmann::json;

TEST_CASE("trace: a 4-worker rpc_cartpole run gives one valid Chrome trace with a track per worker and thread",
          "[integration][trace]") {
  TempDir dir;
  const std::string path = dir.file("run.json");
  auto r = run_ditask({"--package", module_path("rpc_cartpole"), "--main", "main", "--parallel-workers", "4", "--roles",
                       "agent:0,observer:1-", "--trace", path, "--", "threshold=30"},
                      180s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  std::ifstream in(path);
  REQUIRE(in.good());
  const json trace = json::parse(in);
  const json& events = trace.at("traceEvents");
  std::map<std::int64_t, std::string> processes;
  std::set<std::pair<std::int64_t, std::int64_t>> named_threads;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::string>> open;  // B names per thread
  std::map<std::string, int> async_open;
  std::map<std::string, int> flows;
  std::set<std::pair<std::int64_t, std::int64_t>> used_threads;
  std::map<std::int64_t, int> served, calls, ready, starts, exits;
  long dropped = 0;  // "ring full: N records dropped": on a starved machine a ring may fill
  for (const auto& e : events) {
    const std::string ph = e.at("ph");
    const std::int64_t pid = e.at("pid");
    const std::int64_t tid = e.at("tid");
    REQUIRE(e.at("pid").is_number_integer());  // integer ids: Perfetto draws string ids badly
    REQUIRE(e.at("tid").is_number_integer());
    if (ph == "M") {
      if (e.at("name") == "process_name") {
        processes[pid] = e.at("args").at("name");
      } else if (e.at("name") == "thread_name") {
        named_threads.insert({pid, tid});
      }
      continue;
    }
    used_threads.insert({pid, tid});
    REQUIRE(e.at("ts").is_number());
    const std::string name = e.value("name", "");
    const std::string cat = e.value("cat", "");
    if (ph == "B") {
      open[{pid, tid}].push_back(name);
      if (cat == "rpc") {
        ++served[pid];
      }
    } else if (ph == "E") {
      INFO("an E without its B on node " << pid << " thread " << tid);
      REQUIRE_FALSE(open[{pid, tid}].empty());
      open[{pid, tid}].pop_back();
    } else if (ph == "b") {
      ++async_open[e.at("id").get<std::string>() + " " + name];
      ++calls[pid];
    } else if (ph == "e") {
      --async_open[e.at("id").get<std::string>() + " " + name];
    } else if (ph == "s") {
      ++flows[e.at("id")];
    } else if (ph == "f") {
      CHECK(e.at("bp") == "e");
      --flows[e.at("id")];
    } else if (ph == "i") {
      if (cat == "trace") {
        dropped += std::stol(name.substr(std::string("ring full: ").size()));
      }
      ready[pid] += name == "ready" ? 1 : 0;
      starts[pid] += name == "start (attempt 0)" ? 1 : 0;
      exits[pid] += name == "exit code 0" ? 1 : 0;
    }
  }
  REQUIRE(processes.size() == 4);
  CHECK(processes.at(0) == "node 0 (agent)");
  for (std::int64_t node = 1; node < 4; ++node) {
    CHECK(processes.at(node) == "node " + std::to_string(node) + " (observer)");
  }
  for (const auto& [thread, names] : open) {
    INFO("node " << thread.first << " thread " << thread.second << " left open: " << (names.empty() ? "" : names.back()));
    CHECK(names.empty());  // every span closed
  }
  for (const auto& thread : used_threads) {
    INFO("node " << thread.first << " thread " << thread.second);
    CHECK(named_threads.count(thread) == 1);  // one named track per thread
    CHECK(processes.count(thread.first) == 1);
  }
  // Every call in flight ended and every arrow from caller to callee is paired, but for what a
  // full ring dropped (said in the trace; never in an ordinary run of this job).
  long unpaired = 0;
  for (const auto& [id, balance] : async_open) {
    unpaired += balance != 0 ? 1 : 0;
  }
  for (const auto& [id, balance] : flows) {
    unpaired += balance != 0 ? 1 : 0;
  }
  CHECK(unpaired <= dropped);
  if (dropped > 0) {
    WARN("the trace dropped " << dropped << " records (a ring filled): pairs checked up to that");
  }
  CHECK(flows.size() > 100);
  CHECK(calls[0] > 100);  // the agent's calls to the observers...
  for (std::int64_t node = 0; node < 4; ++node) {
    INFO("node " << node);
    CHECK(served[node] > 0);  // ...served there (and the observers' calls served by the agent)
    CHECK(ready[node] == 1);
    CHECK(starts[node] == 1);
    CHECK(exits[node] == 1);
  }
}

TEST_CASE("trace: a --trace file that cannot be written exits 2 before any worker starts",
          "[integration][trace][bad-input]") {
  TempDir dir;
  auto r = run_ditask(faults("hang_ready", 2, {"--trace", dir.file("missing/run.json")}), 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("ditask: error: --trace '" + dir.file("missing/run.json") + "': no folder '" +
                             dir.file("missing") + "'"));
  CHECK(r.out.empty());
}

TEST_CASE("trace: a worker killed without warning still contributes what it recorded up to its last flush",
          "[integration][trace]") {
  TempDir dir;
  const std::string path = dir.file("run.json");
  DitaskProcess job;
  // The launcher's private folder goes under TMPDIR: the test can watch node 1's part fill.
  job.start(faults("ticks_then_hang", 3, {"--trace", path, "--", "25"}), {{"TMPDIR", dir.path()}});
  job.require_line("got 25 ticks pid=", 60s, 2);
  pid_t victim = 0;
  for (const auto& line : lines_with(job.out(), "got 25 ticks pid=")) {
    if (line.rfind("[node 1]", 0) == 0) {
      victim = numbers_after(line, "pid=").at(0);
    }
  }
  REQUIRE(victim > 0);
  // Wait (bounded) until the flusher wrote node 1's 25 handler spans to its part.
  auto flushed = [&] {
    for (const auto& folder : std::filesystem::directory_iterator(dir.path())) {
      int ticks = 0;
      ditask::detail::trace::part_to_json((folder.path() / "node_1.attempt_0.trace").string(), {},
                                          [&](const std::string& line) {
                                            const json e = json::parse(line);
                                            ticks += e.at("ph") == "B" && e.value("name", "") == "tick" ? 1 : 0;
                                          });
      if (ticks == 25) {
        return true;
      }
    }
    return false;
  };
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!flushed() && std::chrono::steady_clock::now() < until) {
    job.wait_for_line("(no such line)", 50ms);  // reads the job's output meanwhile
  }
  REQUIRE(flushed());
  REQUIRE(::kill(victim, SIGKILL) == 0);
  auto r = job.wait(60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 128 + SIGKILL);
  std::ifstream in(path);
  const json trace = json::parse(in);
  int ticks = 0;
  int killed = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("pid") == 1 && e.at("ph") == "B" && e.value("name", "") == "tick") {
      ++ticks;
    }
    if (e.at("pid") == 1 && e.at("ph") == "i" && e.value("name", "") == "killed by SIGKILL") {
      ++killed;
    }
  }
  CHECK(ticks == 25);   // what node 1 recorded before its last flush
  CHECK(killed == 1);   // and the launcher's account of its end
}

TEST_CASE("trace: a restarted worker's attempts have tracks of their own, named by attempt",
          "[integration][trace]") {
  TempDir dir;
  const std::string path = dir.file("run.json");
  auto r = run_ditask(faults("fail_first_attempt", 2,
                             {"--auto-recover", "--restart-backoff", "0", "--trace", path}),
                      60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  std::ifstream in(path);
  const json trace = json::parse(in);
  std::map<std::int64_t, std::string> node0_threads;  // tid -> track name
  std::set<std::int64_t> node0_used;
  int starts = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("pid") != 0) {
      continue;
    }
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      INFO("thread " << e.at("tid") << " named twice");
      CHECK(node0_threads.emplace(e.at("tid"), e.at("args").at("name")).second);
    } else if (e.at("ph") != "M") {
      node0_used.insert(e.at("tid").get<std::int64_t>());
      starts += e.value("name", "").rfind("start (attempt ", 0) == 0 ? 1 : 0;
    }
  }
  CHECK(starts == 2);
  int first = 0;
  int second = 0;
  for (const auto& [tid, name] : node0_threads) {
    first += name.rfind("entry ", 0) == 0 && name.find("(attempt") == std::string::npos ? 1 : 0;
    second += name.rfind("entry ", 0) == 0 && name.find(" (attempt 1)") != std::string::npos ? 1 : 0;
  }
  CHECK(first == 1);   // attempt 0's entry thread
  CHECK(second == 1);  // attempt 1's, on a track of its own
  for (const auto tid : node0_used) {
    CHECK(node0_threads.count(tid) == 1);  // every track used is named
  }
}
