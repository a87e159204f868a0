// SPDX-License-Identifier: MIT
// task() and its router for Python. Every call that may block (start, stop, emit under
// back-pressure, sync, waits) releases the GIL, so handlers can take it on the dispatcher thread.
#include <chrono>
#include <memory>
#include <optional>

#include <pybind11/stl.h>
#include <ditask/task.hpp>

#include "bindings.hpp"
#include "convert.hpp"

namespace ditask::python {

namespace {

// The guard of the running task (the facade stops it with stop(failed) before dropping it).
std::optional<Running>& running_guard() {
  static std::optional<Running> guard;
  return guard;
}

HandlerId add_handler(const std::string& event, py::object fn, bool once) {
  auto callable = std::make_shared<SharedPyObject>(std::move(fn));
  auto handler = [callable, event](const EventArgs& args) {
    run_python([&] {
      auto [positional, named] = to_python_args(args, event, pickle_allowed(event));
      callable->fn()(*positional, **named);
    });
  };
  py::gil_scoped_release release;
  return once ? task().once(event, handler) : task().on(event, handler);
}

EventArgs packed(const std::string& event, const py::tuple& args, const py::dict& kwargs) {
  return to_event_args(args, kwargs, event, pickle_allowed(event));
}

Waiter make_waiter(const std::string& event) {
  py::gil_scoped_release release;
  return task().waiter(event);
}

// Waits in slices; None on timeout, abort, or when `abort()` (the Python task's failure flag)
// turns true. Raises what a signal handler raised (KeyboardInterrupt).
py::object wait(Waiter& waiter, std::optional<double> timeout_s, const py::object& abort) {
  std::optional<EventArgs> got;
  wait_in_slices(
      timeout_s, [&](std::chrono::milliseconds slice) { return (got = waiter.wait(slice)).has_value(); },
      [&] { return waiter.aborted() || (!abort.is_none() && abort().cast<bool>()); });
  if (!got) {
    return py::none();
  }
  auto [positional, named] = to_python_args(*got, waiter.event(), pickle_allowed(waiter.event()));
  return py::make_tuple(positional, named);
}

py::dict peer_dict(const PeerInfo& peer) {
  py::dict out;
  out["node_id"] = peer.node_id;
  out["attempt"] = peer.attempt;
  out["labels"] = peer.labels;
  out["address"] = peer.address;
  return out;
}

}  // namespace

void bind_task(py::module_& m) {
  m.def(
      "start",
      [](bool async_mode, int n_async_workers, std::set<std::string> labels) {
        StartOptions options;
        options.async_mode = async_mode;
        options.n_async_workers = n_async_workers;
        options.labels = std::move(labels);
        py::gil_scoped_release release;
        running_guard().emplace(task().start(std::move(options)));
      },
      py::arg("async_mode"), py::arg("n_async_workers"), py::arg("labels"));
  m.def(
      "stop",
      [](bool failed) {
        task().stop(failed);
        running_guard().reset();  // already stopped: its stop() does nothing
      },
      py::arg("failed"), py::call_guard<py::gil_scoped_release>());
  m.def("running", [] { return task().running(); });
  m.def("on", [](const std::string& event, py::object fn) { return add_handler(event, std::move(fn), false); });
  m.def("once", [](const std::string& event, py::object fn) { return add_handler(event, std::move(fn), true); });
  m.def("off_pattern", [](const std::string& pattern) { return task().off(pattern); },
        py::call_guard<py::gil_scoped_release>());
  m.def("off_id", [](const std::string& event, HandlerId id) { return task().off(event, id); },
        py::call_guard<py::gil_scoped_release>());
  m.def("emit", [](const std::string& event, const py::tuple& args, const py::dict& kwargs, int scope) {
    auto values = packed(event, args, kwargs);
    py::gil_scoped_release release;
    task().emit_args(event, std::move(values), static_cast<Scope>(scope));
  });
  m.def("emit_to_node", [](std::int64_t node, const std::string& event, const py::tuple& args, const py::dict& kwargs) {
    auto values = packed(event, args, kwargs);
    py::gil_scoped_release release;
    task().emit_args_to(node, {}, event, std::move(values));
  });
  m.def("emit_to_label",
        [](const std::string& pattern, const std::string& event, const py::tuple& args, const py::dict& kwargs) {
          auto values = packed(event, args, kwargs);
          py::gil_scoped_release release;
          task().emit_args_to(std::nullopt, pattern, event, std::move(values));
        });
  py::class_<Waiter>(m, "Waiter")
      .def("wait", &wait, py::arg("timeout"), py::arg("abort"))
      .def_property_readonly("event", &Waiter::event);
  m.def("waiter", &make_waiter, py::arg("event"));
  m.def("sync", [] { task().sync(); }, py::call_guard<py::gil_scoped_release>());
  m.def("ready", [] { task().ready(); }, py::call_guard<py::gil_scoped_release>());
  m.def("finish", [] { return task().finish(); });
  m.def("set_finish", [](bool value) { task().set_finish(value); });
  m.def("labels", [] { return task().labels(); });
  m.def("match_labels", [](const std::vector<std::string>& patterns) { return task().match_labels(patterns); });
  m.def("add_role", [](std::string role) { task().add_role(std::move(role)); });
  m.def("has_role", [](const std::string& role) { return task().has_role(role); });
  m.def("roles", [] { return task().roles(); });
}

void bind_router(py::module_& m) {
  m.def("router_is_active", [] { return task().router().is_active(); });
  m.def("router_node_id", [] { return task().router().node_id(); });
  m.def("router_local_id", [] { return task().router().local_id(); });
  m.def("router_parallel_workers", [] { return task().router().parallel_workers(); });
  m.def("router_labels", [] { return task().router().labels(); });
  m.def("router_roles", [] { return task().router().roles(); });
  m.def("router_peers", [] {
    py::list out;
    for (const auto& peer : task().router().peers()) {
      out.append(peer_dict(peer));
    }
    return out;
  });
  m.def("router_stats", [] {
    const auto s = task().router().stats();
    py::dict out;
    out["sent"] = s.sent;
    out["acked"] = s.acked;
    out["received"] = s.received;
    out["lost"] = s.lost;
    out["dropped"] = s.dropped;
    out["unhandled"] = s.unhandled;
    return out;
  });
}

}  // namespace ditask::python
