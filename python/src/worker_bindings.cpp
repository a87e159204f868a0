// SPDX-License-Identifier: MIT
// Worker mode for Python packages (`python3 -m ditask._worker`, started by the launcher) and
// Parallel.runner. The main thread runs the C++ worker with the GIL released; the entry takes it.
#include <functional>
#include <memory>

#include <pybind11/stl.h>
#include <ditask/error.hpp>
#include <ditask/launcher/parallel.hpp>
#include <ditask/launcher/worker_guard.hpp>
#include <ditask/runtime/worker.hpp>

#include "bindings.hpp"

namespace ditask::python {

namespace {

// `fn` as an entry: called with the GIL, a Python exception becomes the entry's error (its
// type, message and traceback in the `entry '<main>' failed:` line).
std::function<void()> entry_of(py::object fn) {
  auto callable = std::make_shared<SharedPyObject>(std::move(fn));
  return [callable] {
    run_python([&] { callable->fn()(); });
  };
}

// Worker mode: `resolve(package, main)` imports the user's package and returns its entry.
int run_worker(std::vector<std::string> args, py::object resolve) {
  launcher::die_with_launcher();
  auto resolver = std::make_shared<SharedPyObject>(std::move(resolve));
  py::gil_scoped_release release;
  return detail::worker_entry_points().run_worker(std::move(args), [resolver](const WorkerEnv& env) {
    Gil gil;
    try {
      return entry_of(resolver->fn()(env.package, env.main));
    } catch (py::error_already_set& e) {
      throw Error("cannot load entry '" + env.main + "' of Python package '" + env.package + "': " + describe(e));
    }
  });
}

template <class T>
void take(const py::dict& options, const char* key, T& into) {
  if (options.contains(key) && !options[key].is_none()) {
    into = options[key].cast<T>();
  }
}

int run_parallel(const py::dict& options, py::object main) {
  RunnerOptions o;
  take(options, "n_parallel_workers", o.n_parallel_workers);
  take(options, "topology", o.topology);
  take(options, "protocol", o.protocol);
  take(options, "address", o.address);
  take(options, "ports", o.ports);
  take(options, "node_ids", o.node_ids);
  take(options, "attach_to", o.attach_to);
  take(options, "labels", o.labels);
  take(options, "auto_recover", o.auto_recover);
  take(options, "max_retries", o.max_retries);
  take(options, "restart_backoff", o.restart_backoff);
  take(options, "startup_interval", o.startup_interval);
  take(options, "grace_period", o.grace_period);
  take(options, "timeout", o.timeout);
  take(options, "log_dir", o.log_dir);
  take(options, "log_level", o.log_level);
  take(options, "roles", o.roles);
  take(options, "world_size", o.world_size);
  take(options, "mq_type", o.mq_type);
  take(options, "redis_host", o.redis_host);
  take(options, "redis_port", o.redis_port);
  auto entry = entry_of(std::move(main));
  py::gil_scoped_release release;
  return Parallel::runner(std::move(o))(entry);
}

}  // namespace

void bind_worker(py::module_& m) {
  m.def("run_worker", &run_worker, py::arg("args"), py::arg("resolve"));
  m.def("in_worker", [] { return Parallel::in_worker(); });
  m.def("run_parallel", &run_parallel, py::arg("options"), py::arg("main"));
}

}  // namespace ditask::python
