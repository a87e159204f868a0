# SPDX-License-Identifier: MIT
"""ditask for Python: DI-engine's ``task`` and ``Parallel`` over ditask's C++ runtime.

``from ditask import task, Parallel``; docs/python.md has the whole API, the type mapping and
the differences from DI-engine.
"""
from . import metrics, rpc
from ._ditask import Error, RpcError, TimeoutError, allow_pickle
from .context import Context, OnlineRLContext
from .parallel import Parallel
from .task import Task, task

__all__ = ["task", "Task", "Parallel", "Context", "OnlineRLContext", "rpc", "metrics", "allow_pickle", "Error",
           "RpcError", "TimeoutError"]
