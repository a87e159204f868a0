// SPDX-License-Identifier: MIT
// The extension module ditask._ditask: the C++ runtime under the Python facade (python/ditask/).
#include <mutex>
#include <set>

#include <ditask/error.hpp>
#include <ditask/metrics.hpp>

#include "bindings.hpp"

namespace ditask::python {

namespace {
std::set<std::string>& pickled_events() {
  static std::set<std::string> events;  // guarded by the GIL
  return events;
}
}  // namespace

bool pickle_allowed(const std::string& event) {
  // A router event (task.router.emit) travels as "parallel:<name>"; allow_pickle takes <name>.
  constexpr std::string_view kRouterPrefix = "parallel:";
  return pickled_events().count(event) != 0 ||
         (event.rfind(kRouterPrefix, 0) == 0 && pickled_events().count(event.substr(kRouterPrefix.size())) != 0);
}

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

std::chrono::milliseconds to_millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

bool wait_in_slices(std::optional<double> timeout_s, const std::function<bool(std::chrono::milliseconds)>& wait_slice,
                    const std::function<bool()>& give_up) {
  using std::chrono::steady_clock;
  constexpr std::chrono::milliseconds kSlice(50);  // Python's signal handlers run between slices
  const auto deadline =
      timeout_s ? steady_clock::now() + std::chrono::duration_cast<steady_clock::duration>(
                                            std::chrono::duration<double>(*timeout_s))
                : steady_clock::time_point::max();
  for (;;) {
    auto slice = kSlice;
    if (deadline != steady_clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
      slice = std::max(std::chrono::milliseconds(0), std::min(left, kSlice));
    }
    bool done = false;
    {
      py::gil_scoped_release release;
      done = wait_slice(slice);
    }
    if (done) {
      return true;
    }
    if (give_up && give_up()) {
      return false;
    }
    if (PyErr_CheckSignals() != 0) {
      throw py::error_already_set();
    }
    if (steady_clock::now() >= deadline) {
      return false;
    }
  }
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

SharedPyObject::~SharedPyObject() {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) {
    object_.release();  // the interpreter is gone: leak rather than touch it
    return;
  }
  Gil gil;
  object_ = py::object();
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
  // ditask.metrics (metrics.py): TensorBoard curves, as ditask::metrics() writes them.
  m.def(
      "metrics_scalar",
      [](const std::string& tag, std::int64_t step, double value) { ditask::metrics().scalar(tag, step, value); },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "metrics_histogram",
      [](const std::string& tag, std::int64_t step, const std::vector<double>& values) {
        ditask::metrics().histogram(tag, step, values);
      },
      py::call_guard<py::gil_scoped_release>());
  m.def("metrics_enabled", [] { return ditask::metrics().enabled(); });
  dp::bind_task(m);
  dp::bind_rpc(m, error);
  dp::bind_rref(m);
  dp::bind_group(m);
  dp::bind_router(m);
  dp::bind_worker(m);
}
