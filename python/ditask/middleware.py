# SPDX-License-Identifier: MIT
"""DI-engine's middleware pipeline (forward, backward, serial, parallel, wrap), run in Python.

A middleware is ``fn(ctx)``; when it is a generator function, the code before ``yield`` is its
forward part and the code after it its backward part. The pipeline stays in Python: a generator
cannot be resumed from C++ without taking the GIL for every step anyway (docs/python.md)."""
import threading
from collections import OrderedDict
from types import GeneratorType

# concurrent.futures (and the logging it imports) is imported where a pool is made: every worker
# imports this module as it starts, and most never use one.


class Pipeline:
    """The middleware half of Task: its state lives from Task.start() to Task.stop()."""

    def __init__(self, async_mode, n_async_workers):
        self.async_mode = async_mode
        self.middleware = []
        self.wrappers = []
        self.backward_stack = OrderedDict()
        self.futures = []
        self.exception = None
        self.thread_lock = threading.Lock()
        self._stack_lock = threading.Lock()
        self._pool = None
        if async_mode:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(n_async_workers, thread_name_prefix="ditask-forward")

    def forward_now(self, fn, ctx, stack=None):
        """Runs fn's forward part; a generator's rest is pushed onto `stack` (the task's by default)."""
        g = fn(ctx)
        if isinstance(g, GeneratorType):
            try:
                next(g)
            except StopIteration:
                return None
            with self._stack_lock:
                (self.backward_stack if stack is None else stack)[id(g)] = g
            return g
        return None

    def forward(self, fn, ctx):
        if self._pool is not None:
            self.futures.append(self._pool.submit(self.forward_now, fn, ctx))
        else:
            self.forward_now(fn, ctx)

    def backward_now(self, stack=None):
        """Runs the pushed backward parts, last pushed first."""
        stack = self.backward_stack if stack is None else stack
        while True:
            with self._stack_lock:
                if not stack:
                    return
                _, g = stack.popitem()
            try:
                next(g)
            except StopIteration:
                pass

    def backward(self):
        if self._pool is not None:
            self.futures.append(self._pool.submit(self.backward_now))
        else:
            self.backward_now()

    def sync(self):
        """Waits for the forwards and backwards started so far; raises the first exception."""
        futures, self.futures = self.futures, []
        if not futures:
            return
        from concurrent.futures import FIRST_EXCEPTION, wait

        wait(futures, return_when=FIRST_EXCEPTION)
        for future in futures:
            if future.done() and future.exception() is not None:
                self.exception = future.exception()
                wait(futures)  # the others see `exception` (their waits end) and finish
                raise self.exception
        wait(futures)

    def wrap(self, fn, lock):
        lock = self.thread_lock if lock is True else lock

        def forward(ctx):
            if lock:
                with lock:
                    g = self.forward_now(fn, ctx)
            else:
                g = self.forward_now(fn, ctx)

            def backward():
                stack = OrderedDict()
                if g is not None:
                    with self._stack_lock:
                        self.backward_stack.pop(id(g), None)
                    stack[id(g)] = g
                if lock:
                    with lock:
                        self.backward_now(stack)
                else:
                    self.backward_now(stack)

            return backward

        forward.__name__ = getattr(fn, "__name__", type(fn).__name__)
        return forward

    def serial(self, fns):
        def _serial(ctx):
            stack = OrderedDict()
            for fn in fns:
                self.forward_now(fn, ctx, stack)
            yield
            self.backward_now(stack)

        _serial.__name__ = "serial<{}>".format(",".join(_name(fn) for fn in fns))
        return _serial

    def parallel(self, fns):
        def _parallel(ctx):
            from concurrent.futures import ThreadPoolExecutor

            stacks = [OrderedDict() for _ in fns]
            with ThreadPoolExecutor(len(fns), thread_name_prefix="ditask-parallel") as pool:
                for future in [pool.submit(self.forward_now, fn, ctx, s) for fn, s in zip(fns, stacks)]:
                    future.result()
            yield
            with ThreadPoolExecutor(len(fns), thread_name_prefix="ditask-parallel") as pool:
                for future in [pool.submit(self.backward_now, s) for s in stacks]:
                    future.result()

        _parallel.__name__ = "parallel<{}>".format(",".join(_name(fn) for fn in fns))
        return _parallel

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _name(fn):
    return getattr(fn, "__name__", type(fn).__name__)
