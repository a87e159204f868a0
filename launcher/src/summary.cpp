// SPDX-License-Identifier: MIT
#include "summary.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "ditask/launcher/group_signal.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/runtime/write_all.hpp"

namespace ditask::launcher {
namespace {

int status_code(int status) {
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

void say(const std::string& text) { ditask::detail::write_all(STDERR_FILENO, "ditask: " + text + "\n"); }

std::string stopped_list(const std::vector<Stopped>& stopped, bool clean) {
  std::string out;
  for (const auto& s : stopped) {
    if (s.clean != clean) {
      continue;
    }
    out += (out.empty() ? "" : ", ") + std::string("node ") + std::to_string(s.node_id) + " (pid " +
           std::to_string(s.pid) + ")";
  }
  return out;
}

}  // namespace

std::string describe_failure(const Failure& failure) {
  std::ostringstream out;
  out << "node " << failure.node_id << " (pid " << failure.pid << ", attempt " << failure.attempt << ") ";
  if (WIFSIGNALED(failure.status)) {
    out << "killed by " << signal_name(WTERMSIG(failure.status));
  } else {
    out << "exited with code " << status_code(failure.status);
  }
  return out.str();
}

int exit_code(const Report& report) {
  if (report.failure) {
    return status_code(report.failure->status);
  }
  switch (report.cause) {
    case StopCause::timeout: return 124;
    case StopCause::signal: return 128 + report.signal;
    default: return 0;
  }
}

void print_summary(const Report& report, const Options& options) {
  if (!report.stopping && !report.failure) {
    DITASK_LOG(info, "launcher") << "all " << report.workers.size() << " workers succeeded";
    return;
  }
  switch (report.cause) {
    case StopCause::timeout:
      say("job timed out after " + options.values.at("timeout") + " s (--timeout); stopped every worker");
      break;
    case StopCause::signal:
      say("stopped by " + signal_name(report.signal) + "; forwarded it to every worker");
      break;
    default:
      break;
  }
  if (const auto& f = report.failure) {
    say("job failed: " + describe_failure(*f));
    if (WIFSIGNALED(f->status)) {
      if (auto hint = signal_hint(WTERMSIG(f->status)); !hint.empty()) {
        say("hint: " + hint);
      }
    }
    if (f->last_stderr.empty()) {
      say("node " + std::to_string(f->node_id) + " wrote nothing to stderr");
    } else {
      say("last lines of node " + std::to_string(f->node_id) + "'s stderr:");
      for (const auto& line : f->last_stderr) {
        say("  | " + line);
      }
    }
    if (!f->log_path.empty()) {
      say("full output: " + f->log_path);
    }
  }
  for (const auto& other : report.also_failed) {
    say("also failed while stopping: " + other);
  }
  if (const auto clean = stopped_list(report.stopped, true); !clean.empty()) {
    // A module that handles "SIGTERM" stopped gracefully, or a worker finished on its own meanwhile.
    say("ended with exit 0 while the job was stopping: " + clean);
  }
  if (const auto stopped = stopped_list(report.stopped, false); !stopped.empty()) {
    say("stopped by the launcher: " + stopped);
  }
  say("exit code " + std::to_string(exit_code(report)));
}

}  // namespace ditask::launcher
