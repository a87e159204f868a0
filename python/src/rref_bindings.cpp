// SPDX-License-Identifier: MIT
// Remote objects for Python (ditask.rpc.define_class / remote / local_ref / RRef): a Python class
// defined under a name on every node, its objects created on another node and called there
// through a handle; handles to C++ objects work the same way. The runtime's object table keeps
// each object while a handle to it exists anywhere (docs/rpc.md "Lifetime").
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ditask/error.hpp>
#include <ditask/rpc.hpp>

#include "bindings.hpp"
#include "convert.hpp"
#include "rpc_call.hpp"

namespace ditask::python {

namespace {

/// The classes this process defined in Python (their objects are SharedPyObjects).
std::set<std::string, std::less<>>& python_classes() {
  static std::set<std::string, std::less<>> classes;
  return classes;
}
std::mutex g_classes_mutex;

bool is_python_class(const std::string& name) {
  std::lock_guard lock(g_classes_mutex);
  return python_classes().count(name) != 0;
}

/// The names allow_pickle() may have been given for the values of `method` of `class_name`.
std::vector<std::string> pickle_keys(const std::string& class_name, const std::string& method) {
  return {class_name, class_name + "." + method};
}

/// This node's handle to one remote object (Python's ditask.rpc.RRef).
class PyRRef {
 public:
  explicit PyRRef(std::shared_ptr<detail::RefRecord> record) : record_(std::move(record)) {}
  PyRRef(PyRRef&&) = default;
  PyRRef& operator=(PyRRef&&) = delete;
  PyRRef(const PyRRef&) = delete;
  PyRRef& operator=(const PyRRef&) = delete;
  ~PyRRef() {
    if (record_ && Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;  // the last handle tells the owner: not under the GIL
      record_.reset();
    }
  }

  const std::shared_ptr<detail::RefRecord>& record() const { return record_; }
  std::int64_t owner() const { return record_->owner(); }
  bool is_owner() const { return record_->local() != nullptr; }
  const std::string& class_name() const { return record_->class_name(); }

  /// The object itself, on its owner. Errors: ditask.Error elsewhere, or for a C++ object.
  py::object local_value() const {
    if (!is_owner()) {
      throw Error("local_value() of a '" + class_name() + "' is on node " + std::to_string(owner()) + " only",
                  "call its methods with rref.rpc_sync().method(...), or take a copy with rref.to_here()");
    }
    if (!is_python_class(class_name())) {
      throw Error("the '" + class_name() + "' here is a C++ object, with no Python value",
                  "call its methods with rref.rpc_sync().method(...)");
    }
    return static_cast<SharedPyObject*>(record_->local().get())->get();
  }

  /// Calls `method` on the owner.
  PyFuture call_async(const std::string& method, const py::tuple& args, const py::dict& kwargs,
                      std::optional<double> timeout_s) const {
    return start_call(within(Callee(owner()), timeout_s), record_->id(), method, class_name() + "." + method,
                      pickle_keys(class_name(), method), args, kwargs);
  }

  /// A copy of the object (the object itself on its owner).
  py::object to_here(std::optional<double> timeout_s) const {
    if (is_owner() && is_python_class(class_name())) {
      return local_value();
    }
    PyFuture answer = start_call(within(Callee(owner()), timeout_s), record_->id(), "__to_here",
                                 class_name() + ".to_here", pickle_keys(class_name(), "to_here"), py::tuple(),
                                 py::dict());
    return answer.wait(timeout_s);
  }

  std::string repr() const {
    return "RRef(" + class_name() + " #" + std::to_string(record_->id()) + " on node " + std::to_string(owner()) + ")";
  }

 private:
  std::shared_ptr<detail::RefRecord> record_;
};

/// The served side of one method (or of to_here, when `method` is empty): runs it on the
/// object being served and returns its value as the call's result.
detail::Handlers method_handlers(const std::string& class_name, const std::string& method) {
  const std::string display = class_name + "." + (method.empty() ? "to_here" : method);
  auto keys = pickle_keys(class_name, method.empty() ? "to_here" : method);
  return detail::make_rpc_handlers([method, display, keys](const EventArgs& args) -> json {
    auto* self = static_cast<SharedPyObject*>(detail::serving_object());
    return run_python([&] {
      const bool pickle = any_pickle_allowed(keys);
      if (method.empty()) {
        return result_to_json(self->get(), display, pickle);
      }
      auto [positional, named] = to_python_args(args, display, pickle);
      return result_to_json(self->get().attr(method.c_str())(*positional, **named), display, pickle);
    });
  });
}

/// A new handle to `object` (of class `class_name`), this node's own.
std::shared_ptr<detail::RefRecord> adopt(py::object object, const std::string& class_name) {
  auto held = std::make_shared<SharedPyObject>(std::move(object));
  py::gil_scoped_release release;
  return detail::adopt_named_object(std::move(held), class_name);
}

/// Defines class `name`: its constructor makes a `cls(...)`, `methods` are callable (those in
/// `concurrent` run on the pool), and to_here() copies the object.
void define_class(const std::string& name, py::object cls, const std::vector<std::string>& methods,
                  const std::set<std::string>& concurrent) {
  detail::check_class_name(name);
  auto factory = std::make_shared<SharedPyObject>(std::move(cls));
  auto constructor = detail::make_rpc_handlers([factory, name](const EventArgs& args) -> json {
    return run_python([&] {
      const bool pickle = any_pickle_allowed(pickle_keys(name, "__init__"));
      auto [positional, named] = to_python_args(args, name, pickle);
      auto record = adopt(factory->fn()(*positional, **named), name);
      detail::begin_reply();
      return detail::rref_to_json(record);  // registered for the caller (the result's receiver)
    });
  });
  {
    std::lock_guard lock(g_classes_mutex);
    python_classes().insert(name);
  }
  py::gil_scoped_release release;
  detail::define_named_class(name, std::move(constructor));
  detail::define_named_method(name, "__to_here", method_handlers(name, ""), false);
  for (const auto& method : methods) {
    detail::define_named_method(name, method, method_handlers(name, method), concurrent.count(method) != 0);
  }
}

}  // namespace

bool is_rref(py::handle value) { return py::isinstance<PyRRef>(value); }

json rref_to_json(py::handle value) { return detail::rref_to_json(value.cast<const PyRRef&>().record()); }

py::object rref_from_json(const json& value) { return py::cast(PyRRef(detail::rref_from_json(value, nullptr))); }

void bind_rref(py::module_& m) {
  py::class_<PyRRef>(m, "RRef")
      .def("owner", &PyRRef::owner)
      .def("is_owner", &PyRRef::is_owner)
      .def_property_readonly("class_name", &PyRRef::class_name)
      .def("local_value", &PyRRef::local_value)
      .def("to_here", &PyRRef::to_here, py::arg("timeout") = py::none())
      .def("_call_async", &PyRRef::call_async, py::arg("method"), py::arg("args"), py::arg("kwargs"),
           py::arg("timeout"))
      .def("__repr__", &PyRRef::repr);
  m.def("rpc_define_class", &define_class, py::arg("name"), py::arg("cls"), py::arg("methods"),
        py::arg("concurrent"));
  m.def("rpc_remote_async",
        [](const py::object& to, const std::string& name, const py::tuple& args, const py::dict& kwargs,
           std::optional<double> timeout_s) {
          return start_call(callee_of(to, timeout_s), 0, "new " + name, name, pickle_keys(name, "__init__"), args,
                            kwargs);
        },
        py::arg("to"), py::arg("name"), py::arg("args"), py::arg("kwargs"), py::arg("timeout"));
  m.def("rpc_local_ref", [](py::object object, const std::string& name) { return PyRRef(adopt(std::move(object), name)); },
        py::arg("object"), py::arg("name"));
}

}  // namespace ditask::python
