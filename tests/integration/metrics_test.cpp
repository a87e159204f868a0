// SPDX-License-Identifier: MIT
// --metrics-dir and ditask::metrics(): the TensorBoard event files the workers write, read back
// by an independent reader (tests/integration/read_tfevents.py: its own CRC-32C, Debian's
// python3-protobuf with TensorBoard's field numbers) and checked value by value.
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <regex>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "run_ditask.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

/// True when /usr/bin/python3 can import google.protobuf (Debian's python3-protobuf).
bool have_reader() { return std::system("/usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1") == 0; }

/// The reader's JSON for every run folder under `dir`; REQUIREs that it read them all.
json read_back(const std::string& dir) {
  const std::string command =
      "/usr/bin/python3 " DITASK_SOURCE_DIR "/tests/integration/read_tfevents.py '" + dir + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 65536> buffer{};
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    out.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  INFO("reader: " << out);
  REQUIRE(status == 0);
  return json::parse(out);
}

}  // namespace

TEST_CASE("metrics: every value a worker records reads back from its TensorBoard file, bit for bit",
          "[integration][metrics]") {
  if (!have_reader()) {
    DITASK_SKIP("/usr/bin/python3 cannot import google.protobuf (Debian package python3-protobuf)");
  }
  TempDir dir;
  auto r = run_ditask({"--package", module_path("metrics_tests"), "--main", "known_values", "--parallel-workers", "2",
                       "--metrics-dir", dir.file("curves")},
                      60s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const json runs = read_back(dir.file("curves"));
  INFO(runs.dump());
  REQUIRE(runs.size() == 2);
  for (int node = 0; node < 2; ++node) {
    INFO("node " << node);
    const json& run = runs.at("node-" + std::to_string(node));
    CHECK(run.at("files") == 1);
    CHECK(run.at("file_version") == json::array({"brain.Event:2"}));
    const json& values = run.at("scalars").at("value");
    REQUIRE(values.size() == 100);
    for (int step = 0; step < 100; ++step) {
      CHECK(values[static_cast<std::size_t>(step)][0] == step);
      CHECK(values[static_cast<std::size_t>(step)][1].get<double>() == node + step / 4.0);  // exact as a float
    }
    CHECK(run.at("scalars").at("train/loss") == json::parse("[[-2, 0.5], [0, -1.25], [1099511627776, 3.0]]"));
    const json& histograms = run.at("histograms").at("weights");
    REQUIRE(histograms.size() == 1);
    CHECK(histograms[0][0] == 7);
    const json& h = histograms[0][1];
    CHECK(h.at("min") == 0.0);
    CHECK(h.at("max") == 9.0);
    CHECK(h.at("num") == 10.0);
    CHECK(h.at("sum") == 45.0);
    CHECK(h.at("sum_squares") == 285.0);
    const auto limits = h.at("bucket_limit").get<std::vector<double>>();
    const auto counts = h.at("bucket").get<std::vector<double>>();
    REQUIRE(limits.size() == 30);
    REQUIRE(counts.size() == 30);
    CHECK(limits.back() == 9.0);
    // TensorBoard's rule: bucket i holds limit[i-1] < x <= limit[i]; recount 0..9 by it.
    std::vector<double> expected(30, 0.0);
    for (int x = 0; x < 10; ++x) {
      std::size_t b = 0;
      while (limits[b] < x) {
        ++b;
      }
      expected[b] += 1;
    }
    CHECK(counts == expected);
  }
}

TEST_CASE("metrics: the cartpole learner's curve reads back as it printed it", "[integration][metrics][rl]") {
  if (!have_reader()) {
    DITASK_SKIP("/usr/bin/python3 cannot import google.protobuf (Debian package python3-protobuf)");
  }
  TempDir dir;
  auto r = run_ditask({"--package", module_path("cartpole"), "--main", "main", "--parallel-workers", "3",
                       "--metrics-dir", dir.path(), "--", "threshold=50"},
                      120s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const json runs = read_back(dir.path());
  REQUIRE(runs.contains("node-0"));  // the learner; collectors record nothing
  CHECK_FALSE(runs.contains("node-1"));
  const json& rewards = runs.at("node-0").at("scalars").at("reward");
  const json& running = runs.at("node-0").at("scalars").at("running_reward");
  REQUIRE(rewards.size() == running.size());
  REQUIRE(rewards.size() >= 10);
  for (std::size_t i = 0; i < rewards.size(); ++i) {
    CHECK(rewards[i][0] == static_cast<std::int64_t>(i + 1));  // every episode, in order
    CHECK(running[i][0] == static_cast<std::int64_t>(i + 1));
    const double reward = rewards[i][1];
    CHECK(reward == std::floor(reward));  // an episode's length
    CHECK(reward >= 1);
    CHECK(reward <= 500);
  }
  // "[node 0] Episode 10  Last reward 23.00  Average reward 14.27": each printed line is in the file.
  const std::regex line(R"(Episode (\d+)  Last reward ([0-9.]+)  Average reward ([0-9.]+))");
  int printed = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line); it != std::sregex_iterator(); ++it) {
    const auto episode = std::stoul((*it)[1]);
    REQUIRE(episode >= 1);
    REQUIRE(episode <= rewards.size());
    CHECK(rewards[episode - 1][1].get<double>() == Approx(std::stod((*it)[2])).margin(0.005));
    CHECK(running[episode - 1][1].get<double>() == Approx(std::stod((*it)[3])).margin(0.005));
    ++printed;
  }
  CHECK(printed == static_cast<int>(rewards.size() / 10));
  CHECK(running.back()[1].get<double>() > 50);  // it stopped because the running reward passed 50
}

TEST_CASE("metrics: a --metrics-dir that cannot be made exits 2 before any worker starts",
          "[integration][metrics][bad-input]") {
  TempDir dir;
  const std::string file = dir.write("plain-file", "x");
  auto r = run_ditask(faults("hang_ready", 2, {"--metrics-dir", file + "/curves"}), 30s);
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("ditask: error: cannot create the metrics folder '" + file + "/curves'"));
  CHECK_THAT(r.err, Contains("hint: check that --metrics-dir names a folder you can write"));
  CHECK(r.out.empty());
}
