// SPDX-License-Identifier: MIT
// The extension module ditask._ditask: the C++ runtime under the Python facade (python/ditask/).
#include <mutex>
#include <set>

#include <ditask/error.hpp>

#include "bindings.hpp"

namespace ditask::python {

namespace {
std::set<std::string>& pickled_events() {
  static std::set<std::string> events;  // guarded by the GIL
  return events;
}
}  // namespace

bool pickle_allowed(const std::string& event) { return pickled_events().count(event) != 0; }

void allow_pickle(const std::string& event) { pickled_events().insert(event); }

std::string describe(py::error_already_set& error) {
  std::string text = py::str(error.type().attr("__name__")).cast<std::string>();
  const std::string message = py::str(error.value()).cast<std::string>();
  if (!message.empty()) {
    text += ": " + message;
  }
  try {  // the traceback first, as Python prints it; the caller's error line ends it
    auto lines = py::module_::import("traceback").attr("format_tb")(error.trace());
    std::string trace;
    for (auto line : lines) {
      trace += line.cast<std::string>();
    }
    if (!trace.empty()) {
      auto err = py::module_::import("sys").attr("stderr");
      err.attr("write")("Traceback (most recent call last):\n" + trace);
      err.attr("flush")();
    }
  } catch (py::error_already_set&) {  // no traceback module or stderr: the error line says enough
  }
  return text;
}

void keep_thread_state() {
  thread_local bool kept = false;
  if (kept || PyGILState_GetThisThreadState() != nullptr) {
    return;  // kept already, or a thread of Python's own (its state is Python's to manage)
  }
  kept = true;
  PyGILState_Ensure();  // creates the thread state and takes the GIL; the count stays at 1
  PyEval_SaveThread();  // lets the GIL go and keeps the state
}

PyCallable::~PyCallable() {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) {
    fn_.release();  // the interpreter is gone: leak rather than touch it
    return;
  }
  Gil gil;
  fn_ = py::object();
}

}  // namespace ditask::python

PYBIND11_MODULE(_ditask, m) {
  namespace dp = ditask::python;
  namespace py = pybind11;
  m.doc() = "The C++ runtime of ditask; use the ditask package, not this module.";
  // ditask::Error becomes ditask.Error (a RuntimeError), with its hint as the `hint` attribute.
  static py::exception<ditask::Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<ditask::TimeoutError> timeout(m, "TimeoutError", PyExc_TimeoutError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) {
        std::rethrow_exception(p);
      }
    } catch (const ditask::TimeoutError& e) {
      PyErr_SetString(timeout.ptr(), e.what());
    } catch (const ditask::Error& e) {
      std::string text = e.what();
      if (!e.hint().empty()) {
        text += "\nhint: " + e.hint();
      }
      PyErr_SetString(error.ptr(), text.c_str());
    }
  });
  m.def("allow_pickle", &dp::allow_pickle, py::arg("event"),
        "Lets values of `event` that are not plain data travel pickled, both ways (a pickle runs the sender's code).");
  dp::bind_task(m);
  dp::bind_rpc(m, error);
  dp::bind_group(m);
  dp::bind_router(m);
  dp::bind_worker(m);
}
