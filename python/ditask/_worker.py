# SPDX-License-Identifier: MIT
"""Worker mode for Python packages: ``ditask --package my_pkg --main my_pkg.main`` starts each
worker as ``python3 -m ditask._worker -- ARGS`` with the environment contract (docs/python.md).

``--probe PACKAGE MAIN`` imports the package and looks the entry up without calling it (the
launcher runs it once before starting workers); it exits 2 with a ``ditask: error:`` line when
that fails, 3 when PACKAGE is no Python module at all."""
import importlib
import importlib.util
import os
import sys
import threading


class _NotPython(Exception):
    pass


class _Lines:
    """sys.stdout/sys.stderr of a worker: what one thread prints reaches the stream in whole
    lines, so print() from a handler (the dispatcher thread) and from main, which writes its text
    and its end separately, never share a line of the launcher's tagged output."""

    def __init__(self, stream):
        self._stream = stream
        self._lock = threading.Lock()
        self._local = threading.local()

    def write(self, text):
        pending = getattr(self._local, "pending", "") + text
        cut = pending.rfind("\n") + 1
        self._local.pending = pending[cut:]
        if cut:
            with self._lock:
                self._stream.write(pending[:cut])
                self._stream.flush()
        return len(text)

    def flush(self):
        pending = getattr(self._local, "pending", "")
        self._local.pending = ""
        with self._lock:
            if pending:
                self._stream.write(pending)
            self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _module_name(package):
    """Makes `package` importable and returns its module name. A .py file or a folder with
    __init__.py is imported from its parent folder; anything else is a module name."""
    path = os.path.abspath(package)
    if package.endswith(".py") and os.path.isfile(path):
        folder, name = os.path.split(path)[0], os.path.basename(path)[:-3]
    elif os.path.isdir(path) and os.path.isfile(os.path.join(path, "__init__.py")):
        folder, name = os.path.dirname(path), os.path.basename(path)
    else:
        if importlib.util.find_spec(package.split(".")[0]) is None:
            raise _NotPython(package)
        return package
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return name


def resolve(package, main):
    """The entry `main` of `package`: "pkg.fn" (DI-engine's --main my_pkg.main), "pkg.sub.fn"
    or a bare "fn" of the package itself."""
    name = _module_name(package)
    module_name, _, attr = main.rpartition(".")
    if not module_name:
        module_name = name
    elif module_name != name and not module_name.startswith(name + "."):
        if importlib.util.find_spec(module_name.split(".")[0]) is None:
            module_name = name + "." + module_name
    module = importlib.import_module(module_name)
    fn = getattr(module, attr, None)
    if fn is None:
        names = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))
        raise AttributeError(f"module '{module_name}' has no entry '{attr}' (callables: {', '.join(names) or 'none'})")
    if not callable(fn):
        raise TypeError(f"'{main}' is a {type(fn).__name__}, not a function")
    return fn


def _probe(package, main):
    try:
        resolve(package, main)
    except _NotPython:
        return 3
    except BaseException as e:  # noqa: B902 - anything the import raised is the user's error
        import traceback

        last = traceback.format_exception_only(type(e), e)[-1].strip()
        print(f"ditask: error: cannot load entry '{main}' of Python package '{package}': {last}", file=sys.stderr)
        trace = "".join(traceback.format_tb(e.__traceback__))
        if trace and not isinstance(e, (AttributeError, TypeError)):
            print("Traceback (most recent call last):\n" + trace.rstrip(), file=sys.stderr)
        print("ditask: hint: the package is imported from the folder that holds it; --main names its function "
              "(my_pkg.main)", file=sys.stderr)
        return 2
    return 0


def main(argv):
    if argv[:1] == ["--probe"] and len(argv) == 3:
        return _probe(argv[1], argv[2])
    if argv[:1] == ["--"]:
        argv = argv[1:]
    sys.argv = [sys.argv[0], *argv]  # the entry sees the words after --, as ditask::args()
    sys.stdout, sys.stderr = _Lines(sys.stdout), _Lines(sys.stderr)
    from . import _ditask

    return _ditask.run_worker(argv, resolve)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
