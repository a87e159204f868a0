// SPDX-License-Identifier: MIT
#include "python_worker.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "ditask/error.hpp"

namespace ditask::app {

namespace fs = std::filesystem;

namespace {

std::string interpreter() {
  if (const char* chosen = std::getenv("DITASK_PYTHON"); chosen != nullptr && *chosen != '\0') {
    return chosen;
  }
#ifdef DITASK_PYTHON_EXECUTABLE
  return DITASK_PYTHON_EXECUTABLE;
#else
  return "";
#endif
}

// Appends `folder` to a colon-separated path. (Not `(a ? "" : ":") + b`: GCC 12 at -O3 warns
// about that with a false -Wrestrict, which fails the release stage.)
void append_path(std::string& path, const std::string& folder) {
  if (!path.empty()) {
    path += ':';
  }
  path += folder;
}

// The build tree's package (lib/ditask/python) and the installed one, in front of PYTHONPATH.
void add_package_to_python_path(const std::string& exe) {
  const fs::path prefix = fs::path(exe).parent_path().parent_path();
  std::vector<fs::path> folders = {prefix / "lib/ditask/python"};
  // The installed package: where cmake --install put it, or the .deb's place (python3-ditask).
  // Not under /usr itself, where python3 looks anyway: in front of PYTHONPATH, all of Debian's
  // packages there would shadow those of a user's venv.
  if (prefix != "/usr") {
#ifdef DITASK_PYTHON_PACKAGE_DIR
    folders.push_back(prefix / DITASK_PYTHON_PACKAGE_DIR);
#endif
    folders.push_back(prefix / "lib/python3/dist-packages");
  }
  std::string path;
  for (const auto& folder : folders) {
    std::error_code ec;
    if (fs::is_regular_file(folder / "ditask/__init__.py", ec)) {
      append_path(path, folder.string());
    }
  }
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') {
    append_path(path, old);
  }
  if (!path.empty()) {
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
}

int run_probe(const std::string& python, const std::string& package, const std::string& main) {
  std::vector<std::string> args = {python, "-m", "ditask._worker", "--probe", package, main};
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    throw Error(std::string("cannot fork the package probe: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

bool is_python_path(const std::string& package) {
  std::error_code ec;
  const fs::path path(package);
  if (package.size() > 3 && package.compare(package.size() - 3, 3, ".py") == 0) {
    return fs::is_regular_file(path, ec);
  }
  return fs::is_directory(path, ec) && fs::is_regular_file(path / "__init__.py", ec);
}

launcher::WorkerCommand python_command(std::string& package, const std::string& main, const std::string& exe,
                                       bool& found) {
  found = true;
  const bool by_path = is_python_path(package);
  const std::string python = interpreter();
  if (python.empty() && !by_path) {
    found = false;
    return {};
  }
  if (python.empty()) {
    throw Error("'" + package + "' is a Python package, and this ditask was built without its Python component",
                "install pybind11-dev and python3-dev and build again (cmake -DDITASK_PYTHON=ON), or set "
                "DITASK_PYTHON to a python3 that can import ditask");
  }
  add_package_to_python_path(exe);
  if (by_path) {
    package = fs::absolute(package).lexically_normal().string();
  }
  const int rc = run_probe(python, package, main);
  if (rc == 3 || (rc != 0 && rc != 2 && !by_path)) {
    found = false;
    return {};
  }
  if (rc == 2) {
    throw launcher::PackageRejected("package '" + package + "' was rejected by the probe");
  }
  if (rc != 0) {
    throw Error("the Python interpreter '" + python + "' could not run ditask's worker (exit " + std::to_string(rc) + ")",
                "its error is above; set DITASK_PYTHON to the python3 ditask was built for, one that can import ditask");
  }
  return launcher::WorkerCommand{python, {"-m", "ditask._worker", "--"}};
}

}  // namespace ditask::app
