// SPDX-License-Identifier: MIT
// Worker mode's inputs (environment contract, module arguments) and worker_main in-process.
#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdlib.h>
#include <string>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include "internal_access.hpp"
#include "transport/make_transport.hpp"
#include "transport/transport.hpp"

#include <ditask/ditask.hpp>
#include <ditask/runtime/worker.hpp>

using Catch::Matchers::Contains;
using Env = std::map<std::string, std::string>;

namespace {

const Env kMinimal = {
    {"DITASK_NODE_ID", "3"}, {"DITASK_PACKAGE", "libfoo.so"}, {"DITASK_MAIN", "main"}};

Env with(Env env, const std::string& key, const std::string& value) {
  env[key] = value;
  return env;
}

Env without(Env env, const std::string& key) {
  env.erase(key);
  return env;
}

ditask::Error env_error_of(const Env& env) {
  try {
    ditask::parse_worker_env(env);
  } catch (const ditask::Error& e) {
    return e;
  }
  FAIL("expected a ditask::Error");
  return ditask::Error("unreachable");
}

/// Sets environment variables for one scope (worker_main reads the real environment).
struct ScopedEnv {
  explicit ScopedEnv(const Env& env) : keys_(env) {
    for (const auto& [key, value] : env) {
      setenv(key.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& entry : keys_) {
      unsetenv(entry.first.c_str());
    }
  }
  Env keys_;
};

/// worker_main with `argv`; leaves the process-wide task as it found it.
int run_worker(std::vector<std::string> argv) {
  std::vector<char*> raw;
  for (auto& arg : argv) {
    raw.push_back(arg.data());
  }
  raw.push_back(nullptr);
  const int code = ditask::worker_main(static_cast<int>(argv.size()), raw.data());
  ditask::detail::RouterAccess::deactivate(ditask::task().router());
  ditask::detail::set_args({});
  ditask::log::set_tag("ditask");
  return code;
}

}  // namespace

TEST_CASE("the minimal contract has defaults for everything else", "[worker]") {
  const auto w = ditask::parse_worker_env(kMinimal);
  CHECK(w.node_id == 3);
  CHECK(w.package == "libfoo.so");
  CHECK(w.main == "main");
  CHECK(w.local_id == 0);
  CHECK(w.parallel_workers == 1);
  CHECK_FALSE(w.world_size.has_value());
  CHECK(w.attach_to.empty());
  CHECK(w.labels.empty());
  CHECK(w.attempt == 0);
  CHECK(w.finished_nodes.empty());
  CHECK_FALSE(w.log_level.has_value());
  CHECK(w.plan == nlohmann::json::object());
}

TEST_CASE("every contract variable is read", "[worker]") {
  Env env = kMinimal;
  env.insert({{"DITASK_LOCAL_ID", "2"},
              {"DITASK_PARALLEL_WORKERS", "4"},
              {"DITASK_WORLD_SIZE", "8"},
              {"DITASK_LISTEN", "tcp://127.0.0.1:4000"},
              {"DITASK_ATTACH_TO", "tcp://127.0.0.1:4001, tcp://127.0.0.1:4002"},
              {"DITASK_TOPOLOGY", "mesh"},
              {"DITASK_LABELS", " learner,,collector "},
              {"DITASK_RUN_ID", "run-42"},
              {"DITASK_ATTEMPT", "1"},
              {"DITASK_FINISHED_NODES", "0, 5"},
              {"DITASK_LOG_LEVEL", "debug"},
              {"DITASK_PLAN", R"({"token": "t", "frame_limit": 1024})"}});
  const auto w = ditask::parse_worker_env(env);
  CHECK(w.local_id == 2);
  CHECK(w.parallel_workers == 4);
  CHECK(w.world_size == 8);
  CHECK(w.listen == "tcp://127.0.0.1:4000");
  CHECK(w.attach_to == std::vector<std::string>{"tcp://127.0.0.1:4001", "tcp://127.0.0.1:4002"});
  CHECK(w.topology == "mesh");
  CHECK(w.labels == std::set<std::string>{"collector", "learner"});
  CHECK(w.run_id == "run-42");
  CHECK(w.attempt == 1);
  CHECK(w.finished_nodes == std::set<std::int64_t>{0, 5});
  CHECK(w.log_level == ditask::log::Level::debug);
  CHECK(w.plan["frame_limit"] == 1024);
}

TEST_CASE("required variables are named when missing or empty", "[worker]") {
  for (const char* key : {"DITASK_NODE_ID", "DITASK_PACKAGE", "DITASK_MAIN"}) {
    auto e = env_error_of(without(kMinimal, key));
    CHECK(std::string(e.what()) == std::string(key) + " is not set");
    CHECK_THAT(e.hint(), Contains("never by hand"));
    CHECK(std::string(env_error_of(with(kMinimal, key, "")).what()) ==
          std::string(key) + " is not set");
  }
}

TEST_CASE("malformed numbers are refused with the bad value", "[worker]") {
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_NODE_ID", "abc")).what()) ==
        "invalid DITASK_NODE_ID='abc': expected an integer >= 0");
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_NODE_ID", "-1")).what()) ==
        "invalid DITASK_NODE_ID='-1': expected an integer >= 0");
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_NODE_ID", "3x")).what()) ==
        "invalid DITASK_NODE_ID='3x': expected an integer >= 0");
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_PARALLEL_WORKERS", "0")).what()) ==
        "invalid DITASK_PARALLEL_WORKERS='0': expected an integer >= 1");
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_ATTEMPT", "x")).what()) ==
        "invalid DITASK_ATTEMPT='x': expected an integer >= 0");
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_FINISHED_NODES", "0,two")).what()) ==
        "invalid DITASK_FINISHED_NODES='two': expected an integer >= 0");
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_LOCAL_ID", "1")).what()) ==
        "invalid DITASK_LOCAL_ID='1': expected less than DITASK_PARALLEL_WORKERS=1");
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_WORLD_SIZE", "0")).what()) ==
        "invalid DITASK_WORLD_SIZE='0': expected an integer >= 1");
}

TEST_CASE("log level and plan are validated", "[worker]") {
  auto e = env_error_of(with(kMinimal, "DITASK_LOG_LEVEL", "loud"));
  CHECK(std::string(e.what()) == "invalid DITASK_LOG_LEVEL='loud'");
  CHECK_THAT(e.hint(), Contains("debug"));
  CHECK_THAT(env_error_of(with(kMinimal, "DITASK_PLAN", "{not json")).what(),
             Contains("invalid DITASK_PLAN: "));
}

TEST_CASE("DITASK_PLAN may name a file holding the plan", "[worker]") {
  static std::atomic<int> counter{0};
  const auto path = std::filesystem::temp_directory_path() /
                    ("ditask_plan_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  std::ofstream(path) << R"({"token": "secret"})";
  const auto w = ditask::parse_worker_env(with(kMinimal, "DITASK_PLAN", path.string()));
  CHECK(w.plan["token"] == "secret");
  std::filesystem::remove(path);
  CHECK_THAT(env_error_of(with(kMinimal, "DITASK_PLAN", path.string())).what(),
             Contains("cannot read the DITASK_PLAN file"));
  CHECK(std::string(env_error_of(with(kMinimal, "DITASK_PLAN", "[1, 2]")).what()) ==
        "invalid DITASK_PLAN: expected a JSON object");
}

TEST_CASE("args() holds what set_args gave", "[worker]") {
  CHECK(ditask::args().empty());
  ditask::detail::set_args({"a", "b c"});
  CHECK(ditask::args() == std::vector<std::string>{"a", "b c"});
  ditask::detail::set_args({});
  CHECK(ditask::args().empty());
}

TEST_CASE("worker_main calls the entry and maps the outcome to an exit code", "[worker]") {
  const std::string faults = std::string(DITASK_MODULE_DIR) + "/libfaults.so";
  SECTION("an entry that returns: 0") {
    ScopedEnv env({{"DITASK_NODE_ID", "5"}, {"DITASK_PACKAGE", faults}, {"DITASK_MAIN", "noop"}});
    CHECK(run_worker({"ditask", "--worker", "--", "x"}) == 0);
  }
  SECTION("an entry that throws: 1") {
    ScopedEnv env(
        {{"DITASK_NODE_ID", "5"}, {"DITASK_PACKAGE", faults}, {"DITASK_MAIN", "throw_error"}});
    CHECK(run_worker({"ditask"}) == 1);
  }
  SECTION("a missing entry or contract variable: 2, and nothing of that worker is left behind") {
    ScopedEnv env({{"DITASK_NODE_ID", "5"}, {"DITASK_PACKAGE", faults}, {"DITASK_MAIN", "sgev"}});
    CHECK(ditask::worker_main(1, std::array<char*, 2>{const_cast<char*>("ditask"), nullptr}.data()) == 2);
    // Its router identity and transport plan went with it: a task started later in this process
    // is not node 5 and builds no transport from node 5's plan.
    CHECK_FALSE(ditask::task().router().is_active());
    CHECK(ditask::detail::worker_transport(true) == nullptr);
    CHECK(run_worker({"ditask"}) == 2);
    unsetenv("DITASK_NODE_ID");
    CHECK(run_worker({"ditask"}) == 2);
  }
  CHECK_FALSE(ditask::task().running());
}

TEST_CASE("an address of a scheme no transport registered is refused, naming the schemes there are", "[worker]") {
  const auto env = ditask::parse_worker_env(
      {{"DITASK_NODE_ID", "0"}, {"DITASK_PACKAGE", "x"}, {"DITASK_MAIN", "m"}, {"DITASK_LISTEN", "udp://127.0.0.1:9"}});
  CHECK(ditask::detail::transport_scheme(env) == "udp");
  try {
    ditask::detail::transport_plan(env);
    FAIL("expected a ditask::Error");
  } catch (const ditask::Error& e) {
    CHECK(std::string(e.what()) == "no transport for addresses of the form 'udp://'");
    CHECK(e.hint() == "this runtime has tcp://, ipc://, redis://");
  }
  // In worker mode that is a bad contract: exit code 2 before the entry runs.
  const std::string faults = std::string(DITASK_MODULE_DIR) + "/libfaults.so";
  ScopedEnv scoped({{"DITASK_NODE_ID", "5"}, {"DITASK_PACKAGE", faults}, {"DITASK_MAIN", "noop"},
                    {"DITASK_LISTEN", "udp://127.0.0.1:9"}});
  CHECK(run_worker({"ditask"}) == 2);
  CHECK(ditask::detail::worker_transport(true) == nullptr);
}
