# SPDX-License-Identifier: MIT
"""Remote functions between the nodes of a job (``from ditask import rpc``), as ditask's C++
``rpc()`` offers them and with torch.distributed.rpc's ``rpc_sync`` / ``rpc_async`` names.

A function is defined under a name on the callee, before ``task.start()``, and called by that
name from any node, in Python or C++: ``rpc.call(1, "add", 2, 3)``. ``to`` is a node id, or a
role name (the one node with that ``--roles`` role). Calls of one caller run on the callee one at
a time, in order, unless the function was defined with ``concurrent=True`` (docs/rpc.md)."""
from . import _ditask

Future = _ditask.Future
RpcError = _ditask.RpcError

_names = {}  # function object -> the name it was defined under (rpc_sync(to, fn))


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


def set_default_timeout(seconds):
    """The timeout of calls that give none (60 s at first)."""
    _ditask.rpc_set_default_timeout(float(seconds))


def stats():
    """This node's call counters: calls, answered, failed, timed_out, late_replies, served."""
    return _ditask.rpc_stats()


def _name_of(func):
    if isinstance(func, str):
        return func
    try:
        return _names[func]
    except (KeyError, TypeError):
        raise _ditask.Error(f"{func!r} was not defined with rpc.define\nhint: define it under a name on the callee "
                            "(rpc.define('name', fn)) and call that name") from None
