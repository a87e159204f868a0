// SPDX-License-Identifier: MIT
// Python packages as `--package` (docs/python.md): how bin/ditask starts their workers.
#pragma once

#include <string>

#include "ditask/launcher/launch.hpp"

namespace ditask::app {

/// True when `package` names a Python package by its path: a `.py` file or a folder holding
/// `__init__.py`.
bool is_python_path(const std::string& package);

/// Prepares a job of Python workers: finds the interpreter (DITASK_PYTHON, else the one ditask
/// was built with), puts the package ditask on PYTHONPATH, and probes `package`'s entry `main`
/// in a child interpreter. Returns the workers' command (`python3 -m ditask._worker --`), or
/// false in `found` when `package` is no path to a Python package and no Python module of that
/// name can be run (no interpreter, no such module): the caller reports its own lookup's error.
/// Errors: ditask::Error when Python support is missing or the interpreter cannot run ditask;
/// launcher::PackageRejected when the probe printed why the package cannot load.
launcher::WorkerCommand python_command(std::string& package, const std::string& main, const std::string& exe,
                                       bool& found);

}  // namespace ditask::app
