// SPDX-License-Identifier: MIT
// Remote functions for Python (ditask.rpc): define a Python function under a name, call one on
// another node (any language) with Python values, wait on a Future with the GIL released.
#include <chrono>
#include <memory>
#include <optional>

#include <ditask/error.hpp>
#include <ditask/rpc.hpp>

#include "bindings.hpp"
#include "convert.hpp"

namespace ditask::python {

namespace {

const char* kind_name(RpcError::Kind kind) {
  switch (kind) {
    case RpcError::Kind::remote_exception: return "remote_exception";
    case RpcError::Kind::unknown_function: return "unknown_function";
    case RpcError::Kind::bad_arguments: return "bad_arguments";
    case RpcError::Kind::bad_result: return "bad_result";
    case RpcError::Kind::unknown_object: return "unknown_object";
    case RpcError::Kind::node_left: return "node_left";
    case RpcError::Kind::not_connected: return "not_connected";
    case RpcError::Kind::timeout: return "timeout";
    case RpcError::Kind::stopped: return "stopped";
  }
  return "unknown";
}

/// The result of call_async: wait() for the value (or the RpcError).
class PyFuture {
 public:
  PyFuture(std::shared_ptr<detail::CallState> state, std::string function)
      : state_(std::move(state)), function_(std::move(function)) {}

  bool done() const { return state_->done(); }

  /// The call's value; None for a function that returns nothing. Raises ditask.RpcError, or
  /// TimeoutError when `timeout_s` passes first (the call goes on).
  py::object wait(std::optional<double> timeout_s) {
    if (!wait_in_slices(timeout_s, [this](std::chrono::milliseconds slice) { return state_->wait(slice); })) {
      PyErr_SetString(PyExc_TimeoutError, ("no answer yet from call '" + function_ + "'").c_str());
      throw py::error_already_set();
    }
    state_->rethrow_if_failed();
    const EventArgs result = state_->result_args();
    return result.args.empty() ? py::none() : to_python(result.args[0], function_, pickle_allowed(function_));
  }

 private:
  std::shared_ptr<detail::CallState> state_;
  std::string function_;
};

Callee callee_of(const py::object& to, std::optional<double> timeout_s) {
  Callee callee = py::isinstance<py::str>(to) ? Callee::role(to.cast<std::string>()) : Callee(to.cast<std::int64_t>());
  if (timeout_s) {
    callee = callee.within(to_millis(*timeout_s));
  }
  return callee;
}

PyFuture call_async(const py::object& to, const std::string& function, const py::tuple& args, const py::dict& kwargs,
                    std::optional<double> timeout_s) {
  EventArgs values = to_event_args(args, kwargs, function, pickle_allowed(function));
  const Callee callee = callee_of(to, timeout_s);
  py::gil_scoped_release release;
  detail::OutgoingCall call = detail::begin_call(callee, function);
  if (call.id != 0) {
    try {
      EventArgs header = EventArgs::from(call.id, function, std::uint64_t{0}, call.context);
      header.args.insert(header.args.end(), values.args.begin(), values.args.end());
      header.kwargs = std::move(values.kwargs);
      detail::send_call_args(call, std::move(header));
    } catch (...) {
      detail::abort_call(call, std::current_exception());
    }
  }
  return PyFuture(call.state, function);
}

void define(const std::string& name, py::object fn, bool concurrent) {
  auto callable = std::make_shared<PyCallable>(std::move(fn));
  auto body = [callable, name](const EventArgs& args) -> json {
    return run_python([&] {
      const bool pickle = pickle_allowed(name);
      auto [positional, named] = to_python_args(args, name, pickle);
      return to_json(callable->fn()(*positional, **named), name, pickle);
    });
  };
  py::gil_scoped_release release;
  if (concurrent) {
    rpc().define_concurrent(name, body);
  } else {
    rpc().define(name, body);
  }
}

}  // namespace

void bind_rpc(py::module_& m, py::handle error_base) {
  static py::exception<RpcError> rpc_error(m, "RpcError", error_base.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) {
        std::rethrow_exception(p);
      }
    } catch (const RpcError& e) {
      std::string text = e.what();
      if (!e.hint().empty()) {
        text += "\nhint: " + e.hint();
      }
      py::object error = py::reinterpret_borrow<py::object>(rpc_error.ptr())(text);
      error.attr("kind") = kind_name(e.kind());
      error.attr("node") = e.node();
      error.attr("function") = e.function();
      error.attr("reason") = e.reason();
      PyErr_SetObject(rpc_error.ptr(), error.ptr());
    }
  });
  py::class_<PyFuture>(m, "Future")
      .def("done", &PyFuture::done)
      .def("wait", &PyFuture::wait, py::arg("timeout") = py::none());
  m.def("rpc_define", &define, py::arg("name"), py::arg("fn"), py::arg("concurrent"));
  m.def("rpc_undefine", [](const std::string& name) { return rpc().undefine(name); });
  m.def("rpc_call_async", &call_async, py::arg("to"), py::arg("function"), py::arg("args"), py::arg("kwargs"),
        py::arg("timeout"));
  m.def("rpc_set_default_timeout", [](double seconds) {
    rpc().set_default_timeout(to_millis(seconds));
  });
  m.def("rpc_stats", [] {
    const RpcStats s = rpc().stats();
    py::dict out;
    out["calls"] = s.calls;
    out["answered"] = s.answered;
    out["failed"] = s.failed;
    out["timed_out"] = s.timed_out;
    out["late_replies"] = s.late_replies;
    out["served"] = s.served;
    return out;
  });
}

}  // namespace ditask::python
