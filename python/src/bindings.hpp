// SPDX-License-Identifier: MIT
// The parts of the extension module ditask._ditask, one function per file that fills them in.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: type casters must not differ between files

namespace ditask::python {

namespace py = pybind11;

/// task(): start/stop, events, labels, roles, finish (task_bindings.cpp).
void bind_task(py::module_& m);
/// task().router() (task_bindings.cpp).
void bind_router(py::module_& m);
/// Remote functions and futures; RpcError derives from `error_base` (rpc_bindings.cpp).
void bind_rpc(py::module_& m, py::handle error_base);
/// Remote objects: classes, RRef (rref_bindings.cpp).
void bind_rref(py::module_& m);
/// Task.group and its collectives (group_bindings.cpp).
void bind_group(py::module_& m);
/// Worker mode and Parallel.runner (worker_bindings.cpp).
void bind_worker(py::module_& m);

/// True when values of `event` may be pickled (ditask.allow_pickle). Thread: with the GIL held.
bool pickle_allowed(const std::string& event);
/// Lets values of `event` travel pickled (ditask.allow_pickle). Thread: with the GIL held.
void allow_pickle(const std::string& event);

/// A Python exception as one line, "<Type>: <message>", after writing its traceback to
/// sys.stderr (as Python prints it: the caller's error line comes last). Thread: GIL held.
std::string describe(py::error_already_set& error);

/// `seconds` (a Python timeout) as milliseconds.
std::chrono::milliseconds to_millis(double seconds);

/// A blocking wait that Ctrl-C can end: calls `wait_slice(limit)` with the GIL released, in
/// slices of at most 50 ms that never pass `timeout_s` (none: no end), until it returns true
/// (then true). Between slices, with the GIL: false when `give_up()` says so; raises what a
/// Python signal handler raised (KeyboardInterrupt); false once the timeout passed.
/// Thread: with the GIL held.
bool wait_in_slices(std::optional<double> timeout_s, const std::function<bool(std::chrono::milliseconds)>& wait_slice,
                    const std::function<bool()>& give_up = {});

/// On a thread Python did not make (the runtime's dispatcher, a call's queue thread): gives it a
/// Python thread state that lives as long as the thread, so that taking the GIL there does not
/// create and destroy one each time (in Python 3.11 each costs an mmap and a munmap of its frame
/// stack: a TLB shootdown per event). A no-op on a thread that has one. Thread: without the GIL.
void keep_thread_state();

/// Takes the GIL for Python code on any thread (keep_thread_state first).
class Gil {
 public:
  Gil() = default;
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  struct Kept {
    Kept() { keep_thread_state(); }
  } kept_;
  py::gil_scoped_acquire acquire_;
};

/// Runs `body` (Python code) with the GIL, on any thread, and returns what it returns; a Python
/// exception leaves as std::runtime_error(describe(...)): a handler's, a served call's or an
/// entry's error, which the runtime reports with its node and event.
template <class F>
auto run_python(F&& body) {
  Gil gil;
  try {
    return body();
  } catch (py::error_already_set& e) {
    throw std::runtime_error(describe(e));
  }
}

/// A Python object (a callable, a remote object) that C++ holds and may drop on any thread: its
/// last owner takes the GIL to release it (no-op once the interpreter is gone).
class SharedPyObject {
 public:
  explicit SharedPyObject(py::object object) : object_(std::move(object)) {}
  SharedPyObject(const SharedPyObject&) = delete;
  SharedPyObject& operator=(const SharedPyObject&) = delete;
  ~SharedPyObject();
  /// The object; use with the GIL held.
  const py::object& get() const { return object_; }
  /// The object as a callable; use with the GIL held.
  const py::object& fn() const { return object_; }

 private:
  py::object object_;
};

}  // namespace ditask::python
