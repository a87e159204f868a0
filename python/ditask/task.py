# SPDX-License-Identifier: MIT
"""``task``: DI-engine's Task over ditask's runtime. Events (on, once, off, emit, wait_for) go
through the C++ event bus and mesh: ordered, exactly once, handlers on one dispatcher thread that
takes the GIL only while Python runs. Middleware runs in Python (middleware.py)."""
import atexit
import builtins
import math
import sys
import time

from . import _ditask
from .context import Context
from .middleware import Pipeline

_BOTH, _LOCAL, _REMOTE = 0, 1, 2
_ROUTER_PREFIX = "parallel:"  # router.emit's events travel under their own names (also in module.cpp)


class Router:
    """This process's place in a ditask job (DI-engine's ``Parallel`` as ``task.router``)."""

    @property
    def is_active(self):
        return _ditask.router_is_active()

    @property
    def node_id(self):
        return _ditask.router_node_id()

    @property
    def local_id(self):
        return _ditask.router_local_id()

    @property
    def n_parallel_workers(self):
        return _ditask.router_parallel_workers()

    @property
    def labels(self):
        return set(_ditask.router_labels())

    @property
    def roles(self):
        return set(_ditask.router_roles())

    def peers(self):
        """The peers connected now: dicts of node_id, attempt, labels, address."""
        return _ditask.router_peers()

    def stats(self):
        """The transport's counters: sent, acked, received, lost, dropped, unhandled."""
        return _ditask.router_stats()

    # ---- DI-engine's Parallel-level pub/sub: between processes only, apart from task events ----
    def on(self, event, fn):
        """Calls ``fn(*args, **kwargs)`` for each ``router.emit(event, ...)`` of a peer (never
        this process's own). Needs a started task (the job's connections live in it)."""
        _ditask.on(_ROUTER_PREFIX + event, fn)

    def once(self, event, fn):
        """Like on(), for the next one only."""
        _ditask.once(_ROUTER_PREFIX + event, fn)

    def off(self, event):
        """Removes every handler of the events matching the fnmatch pattern `event`."""
        _ditask.off_pattern(_ROUTER_PREFIX + event)

    def emit(self, event, *args, **kwargs):
        """Sends `event` to every peer, never to this process; a no-op outside a job (DI-engine's
        inactive Parallel)."""
        if self.is_active:
            _ditask.emit(_ROUTER_PREFIX + event, args, kwargs, _REMOTE)


class Task:
    """The process-wide task; use the module global ``task``."""

    def __init__(self):
        self.router = Router()
        self.ctx = None
        self._pipeline = None
        self._handlers = []  # (event, fn, id), for off(event, fn)

    # ---- lifetime ----
    def start(self, async_mode=False, n_async_workers=3, ctx=None, labels=None):
        """Starts the task (in a worker: joins the job and waits until every peer is there).
        Use as ``with task.start(...):``."""
        _ditask.start(bool(async_mode), int(n_async_workers), set(labels or ()))
        self._pipeline = Pipeline(bool(async_mode), int(n_async_workers))
        self.ctx = ctx if ctx is not None else Context()
        self._handlers = []
        return self

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop(failed=exc_type is not None)
        return False

    def stop(self, failed=False):
        """Runs queued handlers, broadcasts ``finish`` (reason "failed" when `failed`), stops.
        Idempotent."""
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            pipeline.exception = pipeline.exception or _Stopping()
            pipeline.close()
        if _ditask.running():
            _ditask.stop(bool(failed))
        self._handlers = []

    @property
    def running(self):
        return _ditask.running()

    @property
    def async_mode(self):
        return self._pipeline is not None and self._pipeline.async_mode

    @property
    def finish(self):
        """True when run() ends after this step; set by a peer's ``finish`` too. Local."""
        return _ditask.finish()

    @finish.setter
    def finish(self, value):
        _ditask.set_finish(bool(value))

    # ---- events ----
    def on(self, event, fn):
        """Calls ``fn(*args, **kwargs)`` for every emit of `event` (exact name)."""
        self._handlers.append((event, fn, _ditask.on(event, fn)))

    def once(self, event, fn):
        """Like on(), for the next emit only."""
        self._handlers.append((event, fn, _ditask.once(event, fn)))

    def off(self, event, fn=None):
        """Removes `fn` (every handler without it) from the events matching the fnmatch `event`.
        The router's handlers (task.router.on) are not the task's: they stay, as in DI-engine."""
        import fnmatch  # here, not at the top: each worker imports this module as it starts

        kept = []
        for name, handler, hid in self._handlers:
            if (fn is None or handler == fn) and fnmatch.fnmatchcase(name, event):
                _ditask.off_id(name, hid)
            else:
                kept.append((name, handler, hid))
        self._handlers = kept

    def emit(self, event, *args, only_remote=False, only_local=False, **kwargs):
        """Emits to the peers (when in a job) and to this process's handlers."""
        scope = _LOCAL if only_local else _REMOTE if only_remote else _BOTH
        _ditask.emit(event, args, kwargs, scope)

    def emit_to_node(self, node_id, event, *args, **kwargs):
        """Emits to one peer only."""
        _ditask.emit_to_node(int(node_id), event, args, kwargs)

    def emit_to_label(self, pattern, event, *args, **kwargs):
        """Emits to the peers having a label matching the fnmatch `pattern`."""
        _ditask.emit_to_label(pattern, event, args, kwargs)

    def emit_to_role(self, role, event, *args, **kwargs):
        """Emits to the peers having role `role`."""
        _ditask.emit_to_label("role." + role, event, args, kwargs)

    def wait_for(self, event, timeout=math.inf, ignore_timeout_exception=True):
        """Waits for the next emit of `event` and returns ``(args, kwargs)``; None when the task
        failed or stopped, or on timeout (TimeoutError with ignore_timeout_exception=False)."""
        return self.waiter(event).wait(timeout, ignore_timeout_exception)

    def waiter(self, event):
        """Subscribes now to the next emit of `event`; ``.wait(timeout)`` on the result later. Use
        it when the event may come between deciding to wait and waiting (wait_for would miss it)."""
        return Waiter(self, _ditask.waiter(event))

    def ready(self):
        """Ends the startup window (run() does it): later remote events reach only current handlers."""
        _ditask.ready()

    # ---- middleware ----
    def use(self, fn, lock=False):
        """Appends a middleware; `lock` True (the task's lock) or a threading.Lock serialises it."""
        pipeline = self._checked()
        for wrapper in pipeline.wrappers:
            fn = wrapper(fn)
        pipeline.middleware.append(pipeline.wrap(fn, lock))
        return self

    def use_wrapper(self, fn):
        """Wraps every middleware used so far and every later one."""
        pipeline = self._checked()
        pipeline.middleware = [fn(m) for m in pipeline.middleware]
        pipeline.wrappers.append(fn)
        return self

    def run(self, max_step=sys.maxsize):
        """Runs up to `max_step` steps: forwards, sync, backwards, sync; stops once finish is set."""
        pipeline = self._checked()
        if not pipeline.middleware:
            return
        _ditask.ready()
        for i in range(max_step):
            for fn in pipeline.middleware:
                pipeline.forward(fn, self.ctx)
            pipeline.sync()
            pipeline.backward()
            pipeline.sync()
            if i == max_step - 1:
                self.finish = True
            if self.finish:
                break
            self.renew()

    def forward(self, fn, ctx=None):
        """Runs one middleware's forward part now (on the pool in async mode)."""
        self._checked().forward(fn, self.ctx if ctx is None else ctx)
        return self

    def backward(self):
        """Runs the pushed backward parts, last pushed first."""
        self._checked().backward()
        return self

    def sync(self):
        """Waits for the forwards and backwards started so far and for the handlers of the events
        emitted so far; raises the first exception (a handler's as ditask.Error). Not from a handler."""
        self._checked().sync()
        _ditask.sync()
        return self

    def serial(self, *fns):
        """One middleware running `fns` forwards in order, and their backwards in reverse."""
        return self._checked().serial(fns)

    def parallel(self, *fns):
        """One middleware running `fns` forwards concurrently, then their backwards."""
        return self._checked().parallel(fns)

    def wrap(self, fn, lock=False):
        """`fn` as a function to call inside another middleware; it returns its backward part."""
        return self._checked().wrap(fn, lock)

    def renew(self):
        """Replaces the context by ctx.renew()."""
        self.ctx = self.ctx.renew()
        return self

    # ---- labels and roles ----
    @property
    def labels(self):
        return set(_ditask.labels())

    def match_labels(self, patterns):
        """True when any label matches any of the fnmatch `patterns` (a str or a list)."""
        return _ditask.match_labels([patterns] if isinstance(patterns, str) else list(patterns))

    def add_role(self, role):
        _ditask.add_role(role)

    def has_role(self, role):
        return _ditask.has_role(role)

    @property
    def roles(self):
        return set(_ditask.roles())

    def group(self, role):
        """The group of the nodes with role `role` (every node in a job without --roles), for
        ``barrier(timeout=None)``, ``broadcast(value, root=0)`` and ``all_reduce(values, op="sum")``
        (docs/groups.md). Call it once every member joined (after start())."""
        return _ditask.group(role)

    # ---- inner ----
    def _checked(self):
        if self._pipeline is None:
            raise _ditask.Error("the task is not running\nhint: call task.start() first (with task.start(): ...)")
        return self._pipeline

    def _aborted(self):
        return self._pipeline is None or self._pipeline.exception is not None


class Waiter:
    """A subscription to the next emit of one event, made by Task.waiter()."""

    def __init__(self, owner, waiter):
        self._task = owner
        self._waiter = waiter

    def wait(self, timeout=math.inf, ignore_timeout_exception=True):
        """As Task.wait_for: ``(args, kwargs)``, or None (TimeoutError on timeout when asked)."""
        seconds = None if timeout is None or math.isinf(timeout) else float(timeout)
        start = time.monotonic()
        got = self._waiter.wait(seconds, self._task._aborted)
        if got is not None or self._task._aborted() or not _ditask.running():
            return got
        if seconds is not None and time.monotonic() - start >= seconds:
            event = self._waiter.event
            if not ignore_timeout_exception:
                raise builtins.TimeoutError("Timeout when waiting for event: " + event)
            import logging

            logging.warning("Timeout when waiting for event: %s", event)
        return None


class _Stopping(Exception):
    """Marks a stopping task's pipeline: its waits end."""


task = Task()


@atexit.register
def _stop_at_exit():
    if _ditask.running():
        task.stop()
