// SPDX-License-Identifier: MIT
#include "ditask/error.hpp"

#include <unistd.h>

#include <string>

#include "ditask/event_args.hpp"
#include "ditask/handler.hpp"
#include "ditask/version.hpp"
#include "ditask/runtime/write_all.hpp"

namespace ditask {

Error::Error(const std::string& message, std::string hint)
    : std::runtime_error(message), hint_(std::move(hint)) {}

TimeoutError::TimeoutError(const std::string& event)
    : Error("timeout when waiting for event '" + event + "'") {}

HandlerError::HandlerError(std::string event, std::exception_ptr cause)
    : Error("handler for event '" + event + "' failed: " + describe(cause), hint_of(cause)),
      event_(std::move(event)),
      cause_(cause) {}

void print_error(const std::exception& e) noexcept {
  try {
    detail::write_all(STDERR_FILENO, std::string("ditask: error: ") + e.what() + "\n");
    if (const auto* de = dynamic_cast<const Error*>(&e); de != nullptr && !de->hint().empty()) {
      detail::write_all(STDERR_FILENO, "ditask: hint: " + de->hint() + "\n");
    }
  } catch (...) {
    // Out of memory while reporting: nothing better to do.
  }
}

std::string describe(std::exception_ptr e) {
  if (!e) {
    return "no exception";
  }
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

std::string hint_of(std::exception_ptr e) {
  if (!e) {
    return {};
  }
  try {
    std::rethrow_exception(e);
  } catch (const Error& ex) {
    return ex.hint();
  } catch (...) {
    return {};
  }
}

const char* runtime_version() noexcept { return DITASK_VERSION; }

namespace detail {

void throw_arg_error(const std::string& what, const std::string& reason) {
  throw Error(what + ": " + reason);
}

void throw_arity_error(std::size_t expected, std::size_t got) {
  throw Error("handler takes " + std::to_string(expected) + " positional argument(s) but " +
                  std::to_string(got) + " were emitted",
              "match the handler's parameters to the emit, or take 'const ditask::EventArgs&'");
}

void throw_unexpected_kwargs(const json& kwargs) {
  std::string names;
  for (const auto& [name, value] : kwargs.items()) {
    names += (names.empty() ? "'" : ", '") + name + "'";
  }
  throw Error("handler takes no named arguments but got " + names,
              "add a last parameter 'const ditask::Kwargs&'");
}

}  // namespace detail
}  // namespace ditask
