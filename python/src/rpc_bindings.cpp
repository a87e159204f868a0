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
#include "rpc_call.hpp"

namespace ditask::python {

PyFuture::PyFuture(std::shared_ptr<detail::CallState> state, std::string display, std::vector<std::string> pickle_keys)
    : state_(std::move(state)), display_(std::move(display)), pickle_keys_(std::move(pickle_keys)) {}

bool PyFuture::done() const { return state_->done(); }

py::object PyFuture::wait(std::optional<double> timeout_s) {
  if (!wait_in_slices(timeout_s, [this](std::chrono::milliseconds slice) { return state_->wait(slice); })) {
    PyErr_SetString(PyExc_TimeoutError, ("no answer yet from call '" + display_ + "'").c_str());
    throw py::error_already_set();
  }
  if (!value_) {  // converted once: a handle in it is registered here once, however often waited on
    state_->rethrow_if_failed();
    const EventArgs result = state_->result_args();
    value_ = result.args.empty() ? py::none() : to_python(result.args[0], display_, any_pickle_allowed(pickle_keys_));
  }
  return *value_;
}

bool any_pickle_allowed(const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    if (pickle_allowed(key)) {
      return true;
    }
  }
  return false;
}

Callee within(Callee callee, std::optional<double> timeout_s) {
  return timeout_s ? callee.within(to_millis(*timeout_s)) : callee;
}

Callee callee_of(const py::object& to, std::optional<double> timeout_s) {
  return within(py::isinstance<py::str>(to) ? Callee::role(to.cast<std::string>()) : Callee(to.cast<std::int64_t>()),
                timeout_s);
}

PyFuture start_call(const Callee& callee, std::uint64_t object, const std::string& function, std::string display,
                    std::vector<std::string> pickle_keys, const py::tuple& args, const py::dict& kwargs) {
  const bool pickle = any_pickle_allowed(pickle_keys);
  // First without registering handles (RRefs), before the call begins: a value that cannot
  // travel fails here, and no handle was registered for a callee that never gets the call.
  EventArgs values;
  std::size_t handles = 0;
  {
    HandleScope first(Handles::placeholder);
    values = to_event_args(args, kwargs, display, pickle);
    handles = first.seen();
  }
  detail::OutgoingCall call;
  {
    py::gil_scoped_release release;
    call = detail::begin_call(callee, display);
  }
  if (call.id != 0) {
    EventArgs header;
    try {
      if (handles != 0) {  // again, now that the call began: each handle registered for the callee
        HandleScope registered(Handles::registered);
        values = to_event_args(args, kwargs, display, pickle);
      }
      header = EventArgs::from(call.id, function, object, call.context);
      for (auto& value : values.args) {
        header.args.push_back(std::move(value));
      }
      header.kwargs = std::move(values.kwargs);
    } catch (...) {
      detail::abort_call(call, std::current_exception());
      throw;
    }
    py::gil_scoped_release release;
    try {
      detail::send_call_args(call, std::move(header));
    } catch (...) {
      detail::abort_call(call, std::current_exception());
    }
  }
  return PyFuture(call.state, std::move(display), std::move(pickle_keys));
}

namespace {

PyFuture call_async(const py::object& to, const std::string& function, const py::tuple& args, const py::dict& kwargs,
                    std::optional<double> timeout_s) {
  return start_call(callee_of(to, timeout_s), 0, function, function, {function}, args, kwargs);
}

void define(const std::string& name, py::object fn, bool concurrent) {
  auto callable = std::make_shared<SharedPyObject>(std::move(fn));
  auto body = [callable, name](const EventArgs& args) -> json {
    return run_python([&] {
      const bool pickle = pickle_allowed(name);
      auto [positional, named] = to_python_args(args, name, pickle);
      return result_to_json(callable->fn()(*positional, **named), name, pickle);
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
      error.attr("kind") = RpcError::kind_name(e.kind());
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
