// SPDX-License-Identifier: MIT
// The environment contract each worker gets (docs/launcher.md, "Environment contract"), read back by the
// echo_env module, and what workers inherit from the launcher's environment.
#include <cstdlib>
#include <set>

#include <catch2/catch.hpp>

#include "mesh_support.hpp"
#include "run_ditask.hpp"

using namespace std::chrono_literals;
using namespace ditask::test;

namespace {

/// What one worker printed: KEY=VALUE lines as a map, plus the router and args lines.
struct WorkerView {
  std::map<std::string, std::string> vars;
  std::string router;  // after "router "
  std::string args;    // after "args="
  const std::string& at(const std::string& key) const {
    static const std::string missing = "<not printed>";
    auto it = vars.find(key);
    return it == vars.end() ? missing : it->second;
  }
};

/// Groups "[node N] ..." lines of stdout by N.
std::map<long, WorkerView> by_node(const std::string& out) {
  std::map<long, WorkerView> views;
  for (const auto& line : split_lines(out)) {
    if (line.rfind("[node ", 0) != 0) {
      continue;
    }
    auto close = line.find("] ");
    if (close == std::string::npos) {
      continue;
    }
    long node = std::stol(line.substr(6, close - 6));
    std::string text = line.substr(close + 2);
    auto& view = views[node];
    if (text.rfind("router ", 0) == 0) {
      view.router = text.substr(7);
    } else if (text.rfind("args=", 0) == 0) {
      view.args = text.substr(5);
    } else if (auto eq = text.find('='); eq != std::string::npos) {
      view.vars[text.substr(0, eq)] = text.substr(eq + 1);
    }
  }
  return views;
}

using mesh::tcp_port;  // "tcp://127.0.0.1:4242" -> 4242

std::map<long, WorkerView> run_echo_env(std::vector<std::string> args, Env env = {}) {
  std::vector<std::string> full = {"--package", module_path("echo_env")};
  full.insert(full.end(), args.begin(), args.end());
  auto r = run_ditask(full, 30s, std::move(env));
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  return by_node(r.out);
}

}  // namespace

TEST_CASE("each worker gets its own contract variables (mesh)", "[integration][env]") {
  auto views = run_echo_env(
      {"--parallel-workers", "3", "--labels", "a,b", "--node-ids", "10", "--", "hello", "world"});
  REQUIRE(views.size() == 3);
  REQUIRE(views.count(10) == 1);
  REQUIRE(views.count(11) == 1);
  REQUIRE(views.count(12) == 1);
  std::set<long> mesh_ports;
  std::vector<std::string> listens;
  for (long i = 0; i < 3; ++i) {
    const long node = 10 + i;
    CAPTURE(node);
    const auto& v = views[node];
    CHECK(v.at("DITASK_NODE_ID") == std::to_string(node));
    CHECK(v.at("DITASK_LOCAL_ID") == std::to_string(i));
    CHECK(v.at("DITASK_PARALLEL_WORKERS") == "3");
    CHECK(v.at("DITASK_WORLD_SIZE") == "3");
    CHECK(v.at("DITASK_TOPOLOGY") == "mesh");
    CHECK(v.at("DITASK_LABELS") == "a,b");
    CHECK(v.at("DITASK_ATTEMPT") == "0");
    CHECK(v.at("RANK") == std::to_string(i));  // dense, not the node id
    CHECK(v.at("LOCAL_RANK") == std::to_string(i));
    CHECK(v.at("WORLD_SIZE") == "3");
    CHECK(v.at("LOCAL_WORLD_SIZE") == "3");
    CHECK(v.at("MASTER_ADDR") == "127.0.0.1");
    CHECK(v.at("DITASK_RUN_ID") == views[10].at("DITASK_RUN_ID"));
    CHECK(v.at("MASTER_PORT") == views[10].at("MASTER_PORT"));
    const auto& listen = v.at("DITASK_LISTEN");
    const long port = tcp_port(listen);
    CHECK(port > 0);
    mesh_ports.insert(port);
    listens.push_back(listen);
    // mesh: worker i dials the listen addresses of workers 0..i-1
    std::string expected_attach;
    for (long j = 0; j < i; ++j) {
      expected_attach += (j == 0 ? "" : ",") + listens[static_cast<std::size_t>(j)];
    }
    CHECK(v.at("DITASK_ATTACH_TO") == expected_attach);
    CHECK(v.router == "node_id=" + std::to_string(node) + " local_id=" + std::to_string(i) +
                          " active=1 labels=a,b");
    CHECK(v.args == "hello world");
  }
  CHECK(mesh_ports.size() == 3);  // distinct per worker
  CHECK(views[10].at("DITASK_RUN_ID") != "<unset>");
  CHECK_FALSE(views[10].at("DITASK_RUN_ID").empty());
  const std::string master_port_text = views[10].at("MASTER_PORT");
  const long master_port = std::strtol(master_port_text.c_str(), nullptr, 10);
  CAPTURE(master_port_text);
  CHECK(master_port > 0);
  CHECK(mesh_ports.count(master_port) == 0);  // reserved for the user's framework, never the mesh's
}

TEST_CASE("star topology: workers dial worker 0 only", "[integration][env]") {
  auto views = run_echo_env({"--parallel-workers", "3", "--topology", "star"});
  REQUIRE(views.size() == 3);
  const auto& first = views[0].at("DITASK_LISTEN");
  CHECK(tcp_port(first) > 0);
  CHECK(views[0].at("DITASK_ATTACH_TO").empty());
  CHECK(views[1].at("DITASK_ATTACH_TO") == first);
  CHECK(views[2].at("DITASK_ATTACH_TO") == first);
  for (auto& [node, v] : views) {
    CAPTURE(node);
    CHECK(v.at("DITASK_TOPOLOGY") == "star");
  }
}

TEST_CASE("alone topology: nobody dials anybody", "[integration][env]") {
  auto views = run_echo_env({"--parallel-workers", "3", "--topology", "alone"});
  REQUIRE(views.size() == 3);
  for (auto& [node, v] : views) {
    CAPTURE(node);
    CHECK(v.at("DITASK_TOPOLOGY") == "alone");
    CHECK(v.at("DITASK_ATTACH_TO").empty());
    CHECK(tcp_port(v.at("DITASK_LISTEN")) > 0);
  }
}

TEST_CASE("world size and node ids: ranks follow the node ids (--world-size 6 --node-ids 3)",
          "[integration][env]") {
  auto views = run_echo_env({"--parallel-workers", "3", "--world-size", "6", "--node-ids", "3"});
  REQUIRE(views.size() == 3);
  for (long i = 0; i < 3; ++i) {
    const long node = 3 + i;
    CAPTURE(node);
    const auto& v = views[node];
    CHECK(v.at("DITASK_NODE_ID") == std::to_string(node));
    CHECK(v.at("DITASK_LOCAL_ID") == std::to_string(i));
    CHECK(v.at("RANK") == std::to_string(node));
    CHECK(v.at("LOCAL_RANK") == std::to_string(i));
    CHECK(v.at("WORLD_SIZE") == "6");
    CHECK(v.at("DITASK_WORLD_SIZE") == "6");
    CHECK(v.at("LOCAL_WORLD_SIZE") == "3");
    CHECK(v.at("DITASK_PARALLEL_WORKERS") == "3");
  }
}

TEST_CASE("workers inherit the launcher's environment without stale DITASK_* variables",
          "[integration][env]") {
  auto views = run_echo_env({"--", "FOO", "DITASK_FOO", "DITASK_LAUNCH_PARALLEL_WORKERS"},
                            {{"FOO", "bar"},
                             {"DITASK_NODE_ID", "99"},
                             {"DITASK_FOO", "x"},
                             {"DITASK_LAUNCH_PARALLEL_WORKERS", "2"}});
  REQUIRE(views.size() == 2);
  for (long node = 0; node < 2; ++node) {
    CAPTURE(node);
    const auto& v = views[node];
    CHECK(v.at("FOO") == "bar");
    CHECK(v.at("DITASK_FOO") == "<unset>");
    CHECK(v.at("DITASK_LAUNCH_PARALLEL_WORKERS") == "<unset>");  // the launcher's own settings
    CHECK(v.at("DITASK_NODE_ID") == std::to_string(node));
    CHECK(v.args == "FOO DITASK_FOO DITASK_LAUNCH_PARALLEL_WORKERS");
  }
}

TEST_CASE("one worker (--parallel-workers 1) gets the contract too", "[integration][env]") {
  auto r = run_ditask({"--package", module_path("echo_env"), "--parallel-workers", "1"}, 30s);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  auto views = by_node(r.out);
  REQUIRE(views.size() == 1);
  CHECK(views[0].at("DITASK_NODE_ID") == "0");
  CHECK(views[0].at("WORLD_SIZE") == "1");
  CHECK(views[0].at("DITASK_ATTACH_TO").empty());
  CHECK(views[0].router == "node_id=0 local_id=0 active=1 labels=");
  CHECK(r.err.empty());
}
