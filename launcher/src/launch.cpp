// SPDX-License-Identifier: MIT
#include "ditask/launcher/launch.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ditask/error.hpp"
#include "ditask/launcher/plan.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/worker.hpp"
#include "listen_sockets.hpp"
#include "supervisor.hpp"

extern char** environ;

namespace ditask::launcher {

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string entry(*p);
    auto eq = entry.find('=');
    if (eq != std::string::npos) {
      env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  return env;
}

nlohmann::json dry_run_plan(const Options& options) {
  Plan plan = plan_layout(options, make_run_id());
  plan_wiring(plan, options);
  return plan_to_json(plan, options);
}

void probe_package(const Options& options) {
  // A forked child without exec: the launcher has no threads yet, and this costs a fork and a
  // dlopen instead of a whole extra start of the ditask binary. The module's static
  // initialisers run in that child, never in the launcher.
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    throw Error(std::string("cannot fork the package probe: ") + std::strerror(errno));
  }
  if (pid == 0) {
    int rc = probe_main(options.package, options.main);
    std::fflush(nullptr);
    ::_exit(rc);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw PackageRejected("package '" + options.package + "' was rejected by the probe");
  }
}

int launch(const Options& options, const WorkerCommand& command,
           const std::map<std::string, std::string>& extra_contract) {
  log::set_tag("launcher");
  Plan plan = plan_layout(options, make_run_id());
  if (options.protocol == "tcp" && !is_loopback(options.address)) {
    DITASK_LOG(warn, "launcher") << "workers listen on " << options.address
                                 << ", not a loopback address, and the mesh has no token yet: "
                                    "anyone who can reach that address can talk to the job";
  }
  if (!options.log_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(options.log_dir) / plan.run_id, ec);
    if (ec) {
      throw Error("cannot create the log folder in '" + options.log_dir + "': " + ec.message(),
                  "check that --log-dir is writable");
    }
  }
  ListenSockets sockets = ListenSockets::bind_all(plan);
  plan_wiring(plan, options);
  for (auto& worker : plan.workers) {
    worker.env.insert(extra_contract.begin(), extra_contract.end());
  }
  return supervise(options, plan, sockets, command, current_environment());
}

}  // namespace ditask::launcher
