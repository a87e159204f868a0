# SPDX-License-Identifier: MIT
"""Remote functions between the nodes of a job (``from ditask import rpc``), as ditask's C++
``rpc()`` offers them and with torch.distributed.rpc's ``rpc_sync`` / ``rpc_async`` names.

A function is defined under a name on the callee, before ``task.start()``, and called by that
name from any node, in Python or C++: ``rpc.call(1, "add", 2, 3)``. A class is defined the same
way; ``remote(to, cls, args)`` creates an object of it on ``to`` and returns an ``RRef`` whose
``rpc_sync().method(...)`` runs there. ``to`` is a node id, or a
role name (the one node with that ``--roles`` role). Calls of one caller run on the callee one at
a time, in order, unless the function was defined with ``concurrent=True`` (docs/rpc.md)."""
from . import _ditask

Future = _ditask.Future
RpcError = _ditask.RpcError
RRef = _ditask.RRef

_names = {}  # function object -> the name it was defined under (rpc_sync(to, fn))
_classes = {}  # class -> the name it was defined under (remote(to, cls), local_ref(obj))


def define(name, fn=None, concurrent=False):
    """Defines ``fn`` under ``name`` (replacing one of that name); usable as a decorator
    (``@rpc.define("add")``). Its return value is the call's result (None for none)."""
    if fn is None:
        return lambda f: define(name, f, concurrent)
    _ditask.rpc_define(name, fn, bool(concurrent))
    _names[fn] = name
    return fn


def undefine(name):
    """Removes function ``name``; False when there was none."""
    return _ditask.rpc_undefine(name)


def call_async(to, name, *args, timeout=None, **kwargs):
    """Calls ``name`` on ``to`` and returns a Future at once (``.wait()`` for the value)."""
    return _ditask.rpc_call_async(to, name, args, kwargs, None if timeout is None else float(timeout))


def call(to, name, *args, timeout=None, **kwargs):
    """Calls ``name`` on ``to`` and waits for its value. Errors: RpcError (``kind``, ``node``,
    ``function``, ``reason``)."""
    return call_async(to, name, *args, timeout=timeout, **kwargs).wait()


def rpc_async(to, func, args=(), kwargs=None, timeout=None):
    """torch.distributed.rpc's form: ``func`` is a defined function or its name."""
    return call_async(to, _name_of(func), *args, timeout=timeout, **(kwargs or {}))


def rpc_sync(to, func, args=(), kwargs=None, timeout=None):
    """torch.distributed.rpc's form of call()."""
    return rpc_async(to, func, args, kwargs, timeout).wait()


def define_class(name, cls=None, concurrent=()):
    """Defines class ``cls`` under ``name`` (the same on every node), so that others create its
    objects here with ``remote()`` and call their public methods (those not starting with ``_``)
    through an ``RRef``; usable as a decorator (``@rpc.define_class("Counter")``). Methods named in
    ``concurrent`` (or all, with ``concurrent=True``) run concurrently on a pool; the others run
    one at a time per caller, in order, as functions do."""
    if cls is None:
        return lambda c: define_class(name, c, concurrent)
    methods = sorted(m for m in dir(cls) if not m.startswith("_") and callable(getattr(cls, m)))
    parallel = set(methods) if concurrent is True else set(concurrent or ())
    unknown = parallel - set(methods)
    if unknown:
        raise _ditask.Error(f"class {name!r} has no public method {sorted(unknown)[0]!r} to run concurrently")
    _ditask.rpc_define_class(name, cls, methods, parallel)
    _classes[cls] = name
    return cls


def remote_async(to, cls, args=(), kwargs=None, timeout=None):
    """Creates a ``cls`` (a defined class or its name; also a C++ one) on ``to`` with these
    constructor arguments; returns a Future of its RRef at once."""
    return _ditask.rpc_remote_async(to, _class_name(cls), tuple(args), dict(kwargs or {}),
                                    None if timeout is None else float(timeout))


def remote(to, cls, args=(), kwargs=None, timeout=None):
    """torch.distributed.rpc's ``remote``: creates a ``cls`` on ``to`` and returns its RRef (once
    the object exists; PyTorch returns before). Errors: RpcError."""
    return remote_async(to, cls, args, kwargs, timeout).wait()


def local_ref(obj):
    """An RRef others can call to ``obj``, one of this node's own objects of a defined class
    (PyTorch's ``RRef(obj)``)."""
    return _ditask.rpc_local_ref(obj, _class_name(type(obj)))


class _Methods:
    """``rref.rpc_sync()`` / ``rref.rpc_async()``: its attributes are the object's methods."""

    def __init__(self, rref, wait, timeout):
        self._rref, self._wait, self._timeout = rref, wait, timeout

    def __getattr__(self, method):
        rref, wait, timeout = self._rref, self._wait, self._timeout

        def call(*args, **kwargs):
            future = rref._call_async(method, args, kwargs, timeout)
            return future.wait() if wait else future

        call.__name__ = method
        return call


def _rpc_sync(self, timeout=None):
    """``rref.rpc_sync().method(args)`` calls ``method`` on the owner and waits for its value."""
    return _Methods(self, True, None if timeout is None else float(timeout))


def _rpc_async(self, timeout=None):
    """``rref.rpc_async().method(args)`` calls ``method`` on the owner and returns a Future."""
    return _Methods(self, False, None if timeout is None else float(timeout))


RRef.rpc_sync = _rpc_sync
RRef.rpc_async = _rpc_async


def set_default_timeout(seconds):
    """The timeout of calls that give none (60 s at first)."""
    _ditask.rpc_set_default_timeout(float(seconds))


def stats():
    """This node's call counters: calls, answered, failed, timed_out, late_replies, served."""
    return _ditask.rpc_stats()


def _class_name(cls):
    if isinstance(cls, str):
        return cls
    try:
        return _classes[cls]
    except (KeyError, TypeError):
        raise _ditask.Error(f"{cls!r} was not defined with rpc.define_class\nhint: define it under a name on every "
                            "node (rpc.define_class('Name', cls)) first") from None


def _name_of(func):
    if isinstance(func, str):
        return func
    try:
        return _names[func]
    except (KeyError, TypeError):
        raise _ditask.Error(f"{func!r} was not defined with rpc.define\nhint: define it under a name on the callee "
                            "(rpc.define('name', fn)) and call that name") from None
