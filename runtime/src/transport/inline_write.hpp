// SPDX-License-Identifier: MIT
// Who writes an emit to the socket: the emitting thread itself, once after each wait, or the io
// thread. docs/design.md "Threading in a worker".
#pragma once

namespace ditask::detail {

/// Lets the calling thread write its next emit to an idle connection itself instead of waking
/// the transport's io thread (the reply path: a handler's first emit, or an emit right after a
/// wait for an event). The event bus grants it before each handler runs; waits grant it when
/// they return. Thread: any; the grant belongs to the calling thread.
void grant_inline_write() noexcept;

/// True once per grant: the caller may write the event it is sending on its own thread. A
/// thread that emits again before its next wait (a loop of emits) gets false, so those events
/// are batched by the io thread. Thread: any (the caller's own grant).
bool take_inline_write() noexcept;

}  // namespace ditask::detail
