// SPDX-License-Identifier: MIT
// Python values <-> the runtime's JSON arguments (docs/python.md "Types across languages").
#pragma once

#include <cstddef>
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // as bindings.hpp: the same casters in every file
#include <ditask/event_args.hpp>

namespace ditask::python {

namespace py = pybind11;

/// The MessagePack ext subtype of a pickled Python object (only for events that allow it).
inline constexpr std::uint8_t kPickleSubtype = 0x70;
/// The subtype of an array: the same bytes as ditask::torch's tensors ("DTT1", dtype, shape).
inline constexpr std::uint8_t kArraySubtype = 0x74;

/// `value` as one JSON argument of `event`. None, bool, int, float, str, bytes, lists, tuples and
/// dicts with str keys travel as themselves, NumPy arrays as their raw bytes with dtype and shape.
/// Anything else is pickled when `pickle` is true. Errors: ditask::Error naming the type, the
/// place in the argument and the event, with a hint.
json to_json(py::handle value, const std::string& event, bool pickle);
/// One JSON argument as a Python value; an array becomes a NumPy array (NumPy imported then), a
/// pickled value is unpickled only when `pickle` is true. Errors: ditask::Error.
py::object to_python(const json& value, const std::string& event, bool pickle);

/// Positional and named arguments as EventArgs. Errors: as to_json.
EventArgs to_event_args(const py::tuple& args, const py::dict& kwargs, const std::string& event, bool pickle);
/// EventArgs as (tuple, dict). Errors: as to_python.
std::pair<py::tuple, py::dict> to_python_args(const EventArgs& args, const std::string& event, bool pickle);

/// How a remote-object handle (ditask.rpc.RRef) among the values converts on this thread.
enum class Handles {
  refuse,       ///< an event's or a collective's value: refused with an error (the default)
  placeholder,  ///< a first pass: each handle becomes null and is counted, none is registered
  registered,   ///< a call's arguments or result: registered with the owner for the receiver
};

/// Sets how handles convert on this thread while it lives, and counts those seen.
class HandleScope {
 public:
  explicit HandleScope(Handles mode);
  ~HandleScope();
  HandleScope(const HandleScope&) = delete;
  HandleScope& operator=(const HandleScope&) = delete;
  /// The handles converted in this scope.
  std::size_t seen() const;

 private:
  Handles previous_mode_;
  std::size_t previous_seen_;
};

/// A call's result as JSON: first converted without registering any handle in it, so that a
/// value that cannot travel fails before a handle was registered for the receiver (such a
/// registration would hold the object until the receiver leaves), then again for real when it
/// holds handles. Errors: as to_json.
json result_to_json(py::handle value, const std::string& call, bool pickle);

/// True when `value` is a remote-object handle (ditask.rpc.RRef; rref_bindings.cpp).
bool is_rref(py::handle value);
/// A handle as it travels in a call's arguments or result. Errors: ditask::Error elsewhere.
json rref_to_json(py::handle value);
/// A received handle ({"$rref": ...}) as this node's ditask.rpc.RRef. Errors: ditask::Error.
py::object rref_from_json(const json& value);

}  // namespace ditask::python
