// SPDX-License-Identifier: MIT
// One outgoing remote call from Python (a function, a constructor or a method) and its Future;
// shared by rpc_bindings.cpp and rref_bindings.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ditask/rpc.hpp>

#include "bindings.hpp"

namespace ditask::python {

/// The result of a call: wait() for the value (or the RpcError).
class PyFuture {
 public:
  /// `display` names the call in errors; `pickle_keys` are the names allow_pickle() may have
  /// been given for its values (any one allows them).
  PyFuture(std::shared_ptr<detail::CallState> state, std::string display, std::vector<std::string> pickle_keys);
  /// True once the answer (or an error) is in.
  bool done() const;
  /// The call's value; None for a function that returns nothing. Raises ditask.RpcError, or
  /// TimeoutError when `timeout_s` passes first (the call goes on). Thread: with the GIL.
  py::object wait(std::optional<double> timeout_s);

 private:
  std::shared_ptr<detail::CallState> state_;
  std::string display_;
  std::vector<std::string> pickle_keys_;
  std::optional<py::object> value_;  // once converted
};

/// True when allow_pickle() was given one of `keys`. Thread: with the GIL.
bool any_pickle_allowed(const std::vector<std::string>& keys);

/// Sends a call of `function` on object `object` (0: a function) of `callee` with Python
/// arguments and returns its Future. The arguments convert after the call began, so that a
/// handle (RRef) among them is registered for the callee. Errors: ditask.Error when an argument
/// cannot travel (the call is not made). Thread: with the GIL.
PyFuture start_call(const Callee& callee, std::uint64_t object, const std::string& function, std::string display,
                    std::vector<std::string> pickle_keys, const py::tuple& args, const py::dict& kwargs);

/// `callee` with `timeout_s` (none: the default).
Callee within(Callee callee, std::optional<double> timeout_s);
/// `to` (a node id or a role name) with `timeout_s` (none: the default) as a Callee.
Callee callee_of(const py::object& to, std::optional<double> timeout_s);

}  // namespace ditask::python
