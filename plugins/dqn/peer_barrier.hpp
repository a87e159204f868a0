// SPDX-License-Identifier: MIT
// A barrier over every connected peer, known from the router: no hand-counted in-degree as
// DI-engine's Barrier middleware needs (`Barrier(attch_from_nums=...)`). Each node tells every
// peer it arrived and waits until each peer it had when it arrived did the same, or left.
#pragma once

#include <chrono>
#include <string>

namespace dqn {

/// Call it before the task's first run() or ready(): arrivals that come before this node registers
/// its handler are then kept by the startup window. Thread: the run thread (not a handler).
/// Errors: std::runtime_error naming the peers that did
/// not arrive within `timeout`, or that left before arriving.
void peer_barrier(const std::string& name, std::chrono::milliseconds timeout);

}  // namespace dqn
