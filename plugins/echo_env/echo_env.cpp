// SPDX-License-Identifier: MIT
// Prints what a worker was given, for the launcher's environment-contract tests (entry main):
// one `KEY=VALUE` line per contract variable (`KEY=<unset>` when absent), then every variable
// named in the module arguments, the router's view and the arguments themselves.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <ditask/ditask.hpp>

namespace {

const std::vector<std::string> kContract = {"DITASK_NODE_ID",
                                            "DITASK_LOCAL_ID",
                                            "DITASK_PARALLEL_WORKERS",
                                            "DITASK_WORLD_SIZE",
                                            "DITASK_LISTEN",
                                            "DITASK_ATTACH_TO",
                                            "DITASK_TOPOLOGY",
                                            "DITASK_LABELS",
                                            "DITASK_RUN_ID",
                                            "DITASK_ATTEMPT",
                                            "DITASK_PACKAGE",
                                            "DITASK_MAIN",
                                            "DITASK_LOG_LEVEL",
                                            "RANK",
                                            "LOCAL_RANK",
                                            "WORLD_SIZE",
                                            "LOCAL_WORLD_SIZE",
                                            "MASTER_ADDR",
                                            "MASTER_PORT"};

void print_variable(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  std::cout << name << '=' << (value != nullptr ? value : "<unset>") << '\n';
}

std::string joined(const auto& items, const char* separator) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : separator) + item;
  }
  return out;
}

}  // namespace

DITASK_MAIN(main) {
  for (const auto& name : kContract) {
    print_variable(name);
  }
  for (const auto& name : ditask::args()) {
    print_variable(name);
  }
  const auto& router = ditask::task().router();
  std::cout << "router node_id=" << router.node_id() << " local_id=" << router.local_id()
            << " active=" << (router.is_active() ? 1 : 0)
            << " labels=" << joined(router.labels(), ",") << '\n';
  std::cout << "args=" << joined(ditask::args(), " ") << '\n';
  std::cout.flush();
}

// For configs/auto_recover.json: node 0's first attempt crashes (exit code 3, as a failing
// worker would); every later attempt, and every other node, prints "node N attempt A ok".
DITASK_MAIN(crash_first_attempt) {
  const auto& router = ditask::task().router();
  const char* attempt = std::getenv("DITASK_ATTEMPT");
  const std::string a = attempt != nullptr ? attempt : "0";
  if (router.node_id() == 0 && a == "0") {
    std::cerr << "node 0 attempt 0: crashing on purpose (exit 3); --auto-recover restarts it" << std::endl;
    std::exit(3);
  }
  std::cout << "node " << router.node_id() << " attempt " << a << " ok" << std::endl;
}
