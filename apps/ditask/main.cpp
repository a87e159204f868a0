// SPDX-License-Identifier: MIT
// The ditask executable: launcher mode, plus the worker and probe modes it re-executes itself in.
// The only place that turns errors into exit codes.
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli.hpp"
#include "python_worker.hpp"
#include "ditask/error.hpp"
#include "ditask/launcher/launch.hpp"
#include "ditask/launcher/worker_guard.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/worker.hpp"

namespace {

std::string self_exe() {
  std::array<char, 4096> buf{};
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) {
    throw std::runtime_error("cannot find the ditask executable (/proc/self/exe)");
  }
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

std::string plugins_dir(const std::string& exe) {
  auto bin = exe.substr(0, exe.rfind('/'));
  return bin.substr(0, bin.rfind('/')) + "/lib/ditask/plugins";
}

// As a container's PID 1 the kernel drops every signal without a handler: until the supervisor's
// own handlers take over, SIGINT/SIGTERM/SIGQUIT end the launcher as they would elsewhere (no
// worker runs yet).
extern "C" void exit_on_signal(int sig) { ::_exit(128 + sig); }

void handle_signals_as_pid_1() {
  if (::getpid() != 1) {
    return;
  }
  for (int sig : {SIGINT, SIGTERM, SIGQUIT}) {
    std::signal(sig, exit_on_signal);
  }
}

// How the workers start: `ditask --worker` for a C++ module, python3 for a Python package (a
// path to one, or a module name no C++ module has). Probes the package first.
ditask::launcher::WorkerCommand package_command(ditask::launcher::Options& options, const std::string& exe) {
  namespace dl = ditask::launcher;
  bool found = true;
  if (ditask::app::is_python_path(options.package)) {
    return ditask::app::python_command(options.package, options.main, exe, found);
  }
  try {
    options.package = ditask::detail::worker_entry_points().resolve_package(options.package, plugins_dir(exe));
  } catch (const ditask::Error&) {
    std::string name = options.package;
    if (name.find('/') != std::string::npos || name.find(".so") != std::string::npos) {
      throw;
    }
    auto command = ditask::app::python_command(name, options.main, exe, found);
    if (!found) {
      throw;  // neither a C++ module nor a Python one: the C++ lookup's message says where it looked
    }
    return command;
  }
  dl::probe_package(options);
  return dl::WorkerCommand{exe, {"--worker", "--"}};
}

int run(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "--worker" && mode != "--probe") {
    handle_signals_as_pid_1();
  }
  if (mode == "--worker") {
    ditask::launcher::die_with_launcher();
    return ditask::detail::worker_entry_points().worker_main(argc, argv);
  }
  if (mode == "--probe" && argc == 4) {
    return ditask::detail::worker_entry_points().probe_main(argv[2], argv[3]);
  }
  auto command_line = ditask::app::parse_command_line(argc, argv);
  if (command_line.exit_now) {
    return 0;
  }
  namespace dl = ditask::launcher;
  auto options = dl::resolve_options(command_line.values, dl::current_environment());
  options.module_args = command_line.module_args;
  ditask::log::set_level(ditask::log::parse_level(options.log_level));
  if (options.dry_run) {
    std::cout << dl::dry_run_plan(options).dump(2) << std::endl;
    return 0;
  }
  const std::string exe = self_exe();
  dl::WorkerCommand command = package_command(options, exe);
  command.args.insert(command.args.end(), options.module_args.begin(), options.module_args.end());
  return dl::launch(options, command);
}

}  // namespace

int main(int argc, char** argv) try {
  return run(argc, argv);
} catch (const ditask::launcher::PackageRejected&) {
  return static_cast<int>(ditask::launcher::ExitCode::usage);  // the probe printed why
} catch (const ditask::launcher::RendezvousFailed& e) {
  ditask::print_error(e);
  return static_cast<int>(ditask::launcher::ExitCode::rendezvous);
} catch (const ditask::Error& e) {
  ditask::print_error(e);
  return static_cast<int>(ditask::launcher::ExitCode::usage);
} catch (const std::exception& e) {
  std::fprintf(stderr, "ditask: internal error: %s\n", e.what());
  return static_cast<int>(ditask::launcher::ExitCode::internal);
}
