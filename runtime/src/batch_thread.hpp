// SPDX-License-Identifier: MIT
// The scheduling policy of the runtime's own hot threads (the dispatcher, each transport's io
// thread). docs/design.md, "Threading in a worker".
#pragma once

#include <pthread.h>
#include <sched.h>

namespace ditask::detail {

/// Makes the calling thread SCHED_BATCH (nice unchanged): a thread it wakes up runs on an idle
/// core or once it blocks, instead of preempting it on its own core. Without it a woken
/// dispatcher preempted its io thread mid-turn (1.3 involuntary switches per round trip on a
/// 2-core machine, none with it). A policy the system refuses is ignored.
/// Thread: the thread to change.
inline void become_batch_thread() noexcept {
  sched_param param{};
  param.sched_priority = 0;
  (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
}

}  // namespace ditask::detail
