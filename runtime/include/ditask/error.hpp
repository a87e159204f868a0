// SPDX-License-Identifier: MIT
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

#include "ditask/export.hpp"

namespace ditask {

/// Something the user must fix: a bad argument, a misuse of the API, a bad module or config.
/// Carries an optional one-line hint shown as `ditask: hint: ...`.
class DITASK_API Error : public std::runtime_error {
 public:
  /// Thread: any. Errors: none.
  explicit Error(const std::string& message, std::string hint = {});
  /// The hint line, or empty.
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string hint_;
};

/// Thrown by Task::wait_for_or_throw when the event did not come in time
/// (DI-engine's `TimeoutError("Timeout when waiting for event: E")`).
class DITASK_API TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& event);
};

/// An event handler failed (it threw, or its parameter types did not match the emitted
/// arguments). Surfaces from the next Task::emit / run / sync / wait_for on a user thread.
class DITASK_API HandlerError : public Error {
 public:
  /// `what()` is "handler for event '<event>' failed: <cause's what()>".
  HandlerError(std::string event, std::exception_ptr cause);
  /// The event whose handler failed.
  const std::string& event() const noexcept { return event_; }
  /// The original exception; std::rethrow_exception(cause()) gets its type back.
  std::exception_ptr cause() const noexcept { return cause_; }

 private:
  std::string event_;
  std::exception_ptr cause_;
};

/// Prints `ditask: error: <what>` and, when present, `ditask: hint: <hint>` to stderr, each as one write.
DITASK_API void print_error(const std::exception& e) noexcept;

/// The text of an exception_ptr's exception (`what()`, or "unknown exception").
DITASK_API std::string describe(std::exception_ptr e);
/// The hint of an exception_ptr's ditask::Error; empty for any other exception.
DITASK_API std::string hint_of(std::exception_ptr e);

}  // namespace ditask
