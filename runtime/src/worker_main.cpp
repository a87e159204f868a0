// SPDX-License-Identifier: MIT
// Worker mode: environment contract -> router -> module entry -> exit code.
#include <atomic>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <pthread.h>
#include <signal.h>
#include <string_view>
#include <thread>
#include <unistd.h>

#include "ditask/error.hpp"
#include "ditask/module.hpp"
#include "ditask/runtime/worker.hpp"
#include "ditask/runtime/write_all.hpp"
#include "ditask/task.hpp"
#include "task_topic.hpp"
#include "transport/make_transport.hpp"
#include "signal_events.hpp"
#include "internal_access.hpp"
#include "malloc_tuning.hpp"
#include "start_hook.hpp"
#include "trace/trace.hpp"
#include "worker_stats.hpp"

extern char** environ;  // NOLINT: POSIX, declared by no standard header

namespace ditask {
namespace {

std::vector<std::string> args_after_dashes(int argc, char** argv) {
  std::vector<std::string> args;
  bool after = false;
  for (int i = 1; i < argc; ++i) {
    if (after) {
      args.emplace_back(argv[i]);
    } else {
      after = std::string_view(argv[i]) == "--";
    }
  }
  return args;
}

std::map<std::string, std::string> contract_variables() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const auto eq = text.find('=');
    if (eq != std::string_view::npos && text.starts_with("DITASK_")) {
      env.emplace(text.substr(0, eq), text.substr(eq + 1));
    }
  }
  return env;
}

void flush_output() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

// "a\nb" -> "a b": the failure line must stay one line for the launcher's summary.
std::string one_line(std::string text) {
  for (auto& c : text) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return text;
}

// What run_worker set up before its entry, undone when it returns without calling it: a process
// that goes on (a test, an embedding program) must neither stay node N nor build node N's
// transport at its next task().start().
void undo_worker_setup() noexcept {
  detail::shutdown_worker_transport(false);  // drops the plan; nothing was created from it yet
  detail::RouterAccess::deactivate(task().router());
}

int call_entry(const std::function<void()>& entry, const std::string& name) {
  std::string failure;
  std::string hint;
  try {
    entry();
    return 0;
  } catch (const Error& e) {  // the runtime's own errors say what to do next
    failure = e.what();
    hint = e.hint();
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  flush_output();  // the module's own output comes before the verdict
  detail::write_all(STDERR_FILENO, "ditask: error: entry '" + name + "' failed: " + one_line(failure) + "\n" +
                                       (hint.empty() ? "" : "ditask: hint: " + one_line(hint) + "\n"));
  return 1;
}

}  // namespace

int run_worker(std::vector<std::string> args, const EntryResolver& resolve) {
  detail::block_user_signals();  // before any thread exists, so every thread inherits the mask
  detail::keep_freed_memory_for_reuse();  // large frames reuse freed heap memory (no fresh pages per frame)
  detail::set_args(std::move(args));
  WorkerEnv env;
  std::function<void()> entry;
  try {
    env = parse_worker_env(contract_variables());
    log::set_tag("node " + std::to_string(env.node_id));
    if (env.log_level) {
      log::set_level(*env.log_level);
    }
    detail::RouterAccess::activate(
        task().router(), detail::RouterIdentity{env.node_id, env.local_id, env.parallel_workers, env.labels, env.roles, env.attempt});
    detail::TransportPlan plan = detail::transport_plan(env);
    plan.node.topic_prefix = detail::kTaskTopicPrefix;
    plan.node.always_wanted = detail::task_always_wanted();
    detail::set_worker_transport_plan(std::move(plan));
    entry = resolve(env);
  } catch (const std::exception& e) {
    undo_worker_setup();
    print_error(e);
    return 2;
  }
  DITASK_LOG(debug, "worker") << "calling entry '" << env.main << "' of '" << env.package
                              << "' (attempt " << env.attempt << ")";
  int code = 0;
  detail::trace::Session trace_session;  // --trace: records until the worker's last line below
  {
    detail::PeriodicStats live_stats;  // for the launcher's status line, when it asks
    detail::SignalEvents events;
    code = call_entry(entry, env.main);
  }
  if (task().running()) {
    task().stop();  // the module returned without stopping it: run its queued handlers now
  }
  // Delivers what is still queued for peers and says bye; then the counters for --summary-json.
  detail::write_worker_stats(detail::shutdown_worker_transport(code != 0));
  flush_output();
  return code;
}

int worker_main(int argc, char** argv) {
  return run_worker(args_after_dashes(argc, argv), [](const WorkerEnv& env) {
    return std::function<void()>(load_entry(env.package, env.main));
  });
}

int probe_main(const std::string& package, const std::string& entry) {
  try {
    load_entry(package, entry);
    return 0;
  } catch (const std::exception& e) {
    print_error(e);
  } catch (...) {
    detail::write_all(STDERR_FILENO, "ditask: error: loading '" + package + "' failed\n");
  }
  return 2;
}

const WorkerEntryPoints& detail::worker_entry_points() noexcept {
  static const WorkerEntryPoints table{&worker_main, &run_worker, &probe_main, &resolve_package};
  return table;
}

}  // namespace ditask
