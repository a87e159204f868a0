// SPDX-License-Identifier: MIT
// Every example config in configs/ must load and resolve: a shipped example never rots.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ditask/error.hpp"
#include "ditask/launcher/options.hpp"

namespace fs = std::filesystem;
using ditask::launcher::Options;
using ditask::launcher::Source;

namespace {

const fs::path kConfigDir = DITASK_CONFIG_DIR;

std::vector<fs::path> config_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kConfigDir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

Options resolve_config(const std::string& name) {
  return ditask::launcher::resolve_options({{"config", (kConfigDir / name).string()}}, {});
}

}  // namespace

TEST_CASE("every config in configs/ loads and resolves", "[launcher][configs]") {
  const auto files = config_files();
  REQUIRE(files.size() >= 3);
  for (const auto& file : files) {
    INFO("config file: " << file.string());
    try {
      const auto raw = ditask::launcher::load_config(file.string());
      CHECK(raw.count("package") == 1);
      const Options o = ditask::launcher::resolve_options({{"config", file.string()}}, {});
      CHECK(o.origins.at("package") == Source::config);
      CHECK(o.parallel_workers >= 1);
    } catch (const ditask::Error& e) {
      FAIL(e.what() << (e.hint().empty() ? "" : " (hint: " + e.hint() + ")"));
    }
  }
}

TEST_CASE("the example configs say what their names promise", "[launcher][configs]") {
  SECTION("local_mesh.json") {
    const Options o = resolve_config("local_mesh.json");
    CHECK(o.package == "greeting");
    CHECK(o.parallel_workers == 4);
    CHECK(o.topology == "mesh");
  }
  SECTION("star_with_labels.json") {
    const Options o = resolve_config("star_with_labels.json");
    CHECK(o.topology == "star");
    CHECK(o.labels == std::vector<std::string>{"learner", "collector"});
    CHECK(o.node_ids == std::vector<std::int64_t>{10});
  }
  SECTION("auto_recover.json uses the underscore spelling") {
    const Options o = resolve_config("auto_recover.json");
    // An installed example: it names an installed module (the test module faults is not).
    CHECK(o.package == "echo_env");
    CHECK(o.main == "crash_first_attempt");
    CHECK(o.parallel_workers == 2);
    CHECK(o.origins.at("parallel-workers") == Source::config);
    CHECK(o.auto_recover);
    CHECK(o.max_retries == 2);
    CHECK(o.restart_backoff == 0.25);
  }
  SECTION("fixed_ports.json") {
    const Options o = resolve_config("fixed_ports.json");
    CHECK(o.ports == std::vector<std::int64_t>{50515, 50516});
    CHECK(o.startup_interval == 0.5);
  }
  SECTION("star_relay.json: mesh limits, byte counts with suffixes") {
    const Options o = resolve_config("star_relay.json");
    CHECK(o.topology == "star");
    CHECK(o.relay);
    CHECK(o.startup_timeout == 30.0);
    CHECK(o.max_frame_bytes == std::int64_t{16} << 20);
    CHECK(o.send_queue_bytes == std::int64_t{8} << 20);
    CHECK(o.send_timeout == 5.0);
    CHECK(o.send_policy == "drop");
    CHECK(o.token.empty());
  }
  SECTION("ipc_with_log_dir.json") {
    const Options o = resolve_config("ipc_with_log_dir.json");
    CHECK(o.protocol == "ipc");
    CHECK_FALSE(o.tag_output);
    CHECK(o.timeout == 60.0);
  }
}
