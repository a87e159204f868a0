// SPDX-License-Identifier: MIT
// Under Slurm a signal sent to the job step (scancel --signal, srun's Ctrl-C, --signal=USR1@60)
// reaches a worker twice: slurmstepd signals every process of the step (proctrack linuxproc and
// cgroup), and the worker's launcher, signalled too, forwards it. Each copy must not become an
// event of its own. The two copies of one signal come in either order, and two pending copies
// of a standard signal may merge into one, so they are paired by counting: per signal, the events
// so far are max(copies from slurmstepd, copies from the launcher). Where only the launcher's
// copy comes (proctrack/pgid, a signal sent to the launcher by hand), every copy is an event.
// Signals from anyone else are never paired. Pure code, no clock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sys/types.h>

namespace ditask::detail {

/// Who sent a signal to this worker.
enum class SignalSender { step_daemon, launcher, other };

/// `sender` classified: `launcher` is DITASK_LAUNCHER_PID, `step_daemon` the slurmstepd that is
/// the launcher's parent (0 when the job does not run under Slurm: nothing is paired then).
inline SignalSender classify_sender(pid_t sender, pid_t launcher, pid_t step_daemon) noexcept {
  if (step_daemon == 0) {
    return SignalSender::other;
  }
  if (sender == step_daemon) {
    return SignalSender::step_daemon;
  }
  return sender == launcher ? SignalSender::launcher : SignalSender::other;
}

/// The copies of one signal seen so far. Thread: the signal thread.
class SignalCopies {
 public:
  /// How many events `from_step` more copies from slurmstepd, `from_launcher` more from the
  /// launcher and `from_others` more from anyone else make.
  std::int64_t add(std::int64_t from_step, std::int64_t from_launcher, std::int64_t from_others) noexcept {
    const auto before = std::max(step_, launcher_);
    step_ += from_step;
    launcher_ += from_launcher;
    return std::max(step_, launcher_) - before + from_others;
  }

 private:
  std::int64_t step_ = 0;
  std::int64_t launcher_ = 0;
};

/// The slurmstepd that is `launcher`'s parent, or 0: not a Slurm step (no SLURM_STEP_ID in this
/// process's environment, or the launcher's parent is another program). Reads /proc.
pid_t step_daemon_of(pid_t launcher);

}  // namespace ditask::detail
