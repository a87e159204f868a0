// SPDX-License-Identifier: MIT
#include "ditask/launcher/launch.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "ditask/error.hpp"
#include "ditask/launcher/plan.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/worker.hpp"
#include "ditask/runtime/write_all.hpp"
#include "listen_sockets.hpp"
#include "rendezvous.hpp"
#include "summary_json.hpp"
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

namespace {

void print_option_warnings(const Options& options) {
  for (const auto& warning : option_warnings(options)) {
    detail::write_all(STDERR_FILENO, "ditask: warning: " + warning + "\n");
  }
}

/// What leave_rendezvous needs at the end of the job.
struct Meeting {
  RendezvousSpec spec;
  std::vector<RendezvousEntry> table;
};

/// The rendezvous: publishes this launcher's bound addresses, adds the peers it learns to the
/// attach list (by topology) and takes MASTER_ADDR from the rank-0 launcher.
Meeting meet(Plan& plan, Options& options) {
  RendezvousSpec spec;
  spec.url = options.rendezvous;
  spec.run_id = plan.run_id;
  spec.timeout = std::chrono::milliseconds(static_cast<long long>(options.startup_timeout * 1000));
  spec.hosts = options.hosts;
  spec.serve = options.serves_rendezvous;
  RendezvousEntry mine;
  if (options.platform_info.is_object()) {
    mine.rank = options.platform_info.value("rank", std::int64_t{0});
    spec.tasks = options.platform_info.value("tasks", std::int64_t{1});
  } else {
    mine.rank = plan.workers.front().node_id / options.parallel_workers;
    spec.tasks = options.world_size / options.parallel_workers;
  }
  mine.host = options.address;
  for (const auto& w : plan.workers) {
    mine.listen.push_back(w.listen);
    mine.nodes.push_back(w.node_id);
  }
  mine.world_size = plan.world_size;
  mine.instance = new_rendezvous_instance();
  DITASK_LOG(info, "launcher") << "rendezvous at " << spec.url << " as rank " << mine.rank << " of " << spec.tasks;
  auto table = rendezvous(spec, mine);
  auto peers = attach_from(table, mine.rank, options.topology);
  peers.insert(peers.end(), options.attach_to.begin(), options.attach_to.end());
  options.attach_to = std::move(peers);
  if (!table.empty() && table.front().rank == 0) {
    plan.master_addr = table.front().host;
  }
  return {std::move(spec), std::move(table)};
}

// The --layout line people see at start (and with --dry-run), on stderr.
void print_layout(const Options& options) {
  if (!options.layout.empty()) {
    std::fprintf(stderr, "ditask: layout %s: %s\n", options.layout.c_str(), options.layout_text.c_str());
  }
}

}  // namespace

nlohmann::json dry_run_plan(const Options& options) {
  print_option_warnings(options);
  Plan plan = plan_layout(options, run_id_for(options));
  print_layout(options);
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
    int rc = ditask::detail::worker_entry_points().probe_main(options.package, options.main);
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

/// --metrics-dir made absolute (workers may change their directory) and created; "" without it.
static std::string metrics_folder(const Options& options) {
  if (options.metrics_dir.empty()) {
    return "";
  }
  std::error_code ec;
  const auto dir = std::filesystem::absolute(options.metrics_dir, ec);
  if (!ec) {
    std::filesystem::create_directories(dir, ec);
  }
  if (ec || !std::filesystem::is_directory(dir)) {
    throw Error("cannot create the metrics folder '" + options.metrics_dir + "'" + (ec ? ": " + ec.message() : std::string()),
                "check that --metrics-dir names a folder you can write");
  }
  return dir.lexically_normal().string();
}

int launch(const Options& options, const WorkerCommand& command,
           const std::map<std::string, std::string>& extra_contract) {
  log::set_tag("launcher");
  print_option_warnings(options);
  Plan plan = plan_layout(options, run_id_for(options));
  print_layout(options);
  if (!options.log_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(options.log_dir) / plan.run_id, ec);
    if (ec) {
      throw Error("cannot create the log folder in '" + options.log_dir + "': " + ec.message(),
                  "check that --log-dir is writable");
    }
  }
  if (!options.summary_json.empty()) {
    check_output_file("--summary-json", summary_path(options.summary_json, plan));
  }
  if (!options.trace.empty()) {
    check_output_file("--trace", summary_path(options.trace, plan));
  }
  const std::string metrics_root = metrics_folder(options);
  ListenSockets sockets = ListenSockets::bind_all(plan, options.hosts);
  // Only about a mesh that can listen: a bad --address fails above, with no warning first.
  if (options.protocol == "tcp" && !is_loopback(mapped_host(options.hosts, options.address))) {
    if (options.token.empty()) {
      DITASK_LOG(warn, "launcher") << "workers listen on " << options.address
                                   << ", not a loopback address, and no --token is set: the mesh "
                                      "traffic is unauthenticated, anyone who can reach that "
                                      "address can talk to the job";
    } else {
      DITASK_LOG(info, "launcher") << "workers listen on " << options.address
                                   << ", not a loopback address; peers must prove the --token "
                                      "(the traffic itself is not encrypted)";
    }
  }
  Options wired = options;
  std::optional<Meeting> meeting;
  if (!options.rendezvous.empty()) {
    meeting = meet(plan, wired);
  }
  plan_wiring(plan, wired);
  for (auto& worker : plan.workers) {
    worker.env.insert(extra_contract.begin(), extra_contract.end());
    if (!metrics_root.empty()) {
      worker.env["DITASK_METRICS_DIR"] = metrics_root + "/node-" + std::to_string(worker.node_id);
    }
  }
  const int code = supervise(options, plan, sockets, command, current_environment());
  if (meeting) {
    leave_rendezvous(meeting->spec, meeting->table);
  }
  return code;
}

}  // namespace ditask::launcher
