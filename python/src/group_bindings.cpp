// SPDX-License-Identifier: MIT
// Groups for Python: task.group(role) and its barrier, broadcast and all_reduce (docs/groups.md).
// A collective blocks with the GIL released; its GroupError is a ditask.Error.
#include <chrono>

#include <pybind11/stl.h>
#include <ditask/task.hpp>

#include "bindings.hpp"
#include "convert.hpp"

namespace ditask::python {

namespace {

std::chrono::milliseconds limit(std::optional<double> seconds) {
  return seconds ? to_millis(*seconds) : kGroupTimeout;
}

ReduceOp op_of(const std::string& name) {
  if (name == "sum") {
    return ReduceOp::sum;
  }
  if (name == "max") {
    return ReduceOp::max;
  }
  if (name == "min") {
    return ReduceOp::min;
  }
  throw Error("all_reduce: unknown op '" + name + "'", "op is \"sum\", \"max\" or \"min\"");
}

}  // namespace

void bind_group(py::module_& m) {
  py::class_<Group>(m, "Group")
      .def_property_readonly("name", &Group::name)
      .def_property_readonly("members", &Group::members)
      .def_property_readonly("index", &Group::index)
      .def("__len__", &Group::size)
      .def("__contains__", &Group::contains)
      .def(
          "barrier", [](Group& g, std::optional<double> timeout) { g.barrier(limit(timeout)); },
          py::arg("timeout") = py::none(), py::call_guard<py::gil_scoped_release>())
      .def(
          "broadcast",
          [](Group& g, const py::object& value, std::size_t root, std::optional<double> timeout) {
            const std::string what = "broadcast of group '" + g.name() + "'";
            json sent = to_json(value, what, false);
            json got;
            {
              py::gil_scoped_release release;
              got = g.broadcast(sent, root, limit(timeout));
            }
            return to_python(got, what, false);
          },
          py::arg("value"), py::arg("root") = 0, py::arg("timeout") = py::none())
      .def(
          "all_reduce",
          [](Group& g, const std::vector<double>& values, const std::string& op, std::optional<double> timeout) {
            return g.all_reduce(values, op_of(op), limit(timeout));
          },
          py::arg("values"), py::arg("op") = "sum", py::arg("timeout") = py::none(),
          py::call_guard<py::gil_scoped_release>());
  m.def("group", [](const std::string& role) { return task().group(role); }, py::arg("role"),
        py::call_guard<py::gil_scoped_release>());
}

}  // namespace ditask::python
