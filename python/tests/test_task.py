# SPDX-License-Identifier: MIT
"""DI-engine's test_task and test_context, standalone (no job): the middleware pipeline."""
import threading
import time

import pytest

from ditask import Context, OnlineRLContext, task


def step0(ctx):
    ctx.setdefault("pipeline", []).append(0)


def step1(ctx):
    ctx.setdefault("pipeline", []).append(1)


def test_serial_pipeline(started):
    task.forward(step0)
    task.forward(step1)
    task.forward(step0)
    task.forward(step1)
    assert task.ctx.pipeline == [0, 1, 0, 1]
    task.renew()
    assert task.ctx.total_step == 1
    task.forward(step0)
    task.forward(step1)
    assert task.ctx.pipeline == [0, 1]


def test_serial_yield_pipeline(started):
    def yield_step0(ctx):
        ctx.setdefault("pipeline", []).append(0)
        yield
        ctx.pipeline.append(0)

    task.forward(yield_step0)
    task.forward(step1)
    task.backward()
    assert task.ctx.pipeline == [0, 1, 0]


def test_async_pipeline():
    with task.start(async_mode=True):
        task.use(step0)
        task.use(step1)
        task.run(1)
        assert sorted(task.ctx.pipeline) == [0, 1]
        task.finish = False
        task.run(2)
        assert task.ctx.total_step == 1


def test_async_yield_pipeline():
    released = threading.Event()

    def slow(ctx):
        ctx.setdefault("pipeline", []).append(0)
        released.wait(30)
        yield
        ctx.pipeline.append(0)

    with task.start(async_mode=True):
        task.forward(slow)
        task.forward(step1)
        released.set()
        task.sync()
        task.backward()
        task.sync()
        assert sorted(task.ctx.pipeline[:2]) == [0, 1] and task.ctx.pipeline[2] == 0


def test_run_stops_at_max_step_and_renews_between(started):
    steps = []
    task.use(lambda ctx: steps.append(ctx.total_step))
    task.run(3)
    assert steps == [0, 1, 2]
    assert task.finish


def test_emit_from_middleware(started):
    """DI-engine's test_emit: a middleware emits each step; the handler got all 10 once run() ended."""
    greetings = []
    task.on("Greeting", greetings.append)
    task.use(lambda ctx: task.emit("Greeting", "Hi"))
    task.run(10)
    task.sync()
    assert greetings == ["Hi"] * 10


def test_wait_for_inside_run(started):
    got = []

    def waits(ctx):
        greeting = task.waiter("greeting")  # subscribed before the emit: nothing to miss
        task.emit("greeting", "Hi")
        got.append(greeting.wait()[0][0])

    task.use(waits)
    task.run(10)
    assert got == ["Hi"] * 10


def test_timeout_inside_run_propagates(started):
    task.use(lambda ctx: task.wait_for("never", timeout=0.05, ignore_timeout_exception=False))
    with pytest.raises(TimeoutError):
        task.run(1)


def test_async_exception_aborts_waits_and_ends_run():
    def waits_forever(ctx):
        task.wait_for("never")

    def fails(ctx):
        raise RuntimeError("step failed")

    with task.start(async_mode=True):
        task.use(waits_forever)
        task.use(fails)
        with pytest.raises(RuntimeError, match="step failed"):
            task.run(2)
        assert task.ctx.total_step == 0


def test_parallel_in_sequential(started):
    order = []
    slow_may_finish = threading.Event()

    def slow(ctx):
        slow_may_finish.wait(30)
        order.append("slow")

    def fast(ctx):
        order.append("fast")
        slow_may_finish.set()

    task.use(lambda ctx: order.append("begin"))
    task.use(task.parallel(slow, fast))
    task.run(1)
    assert order == ["begin", "fast", "slow"]


def test_serial_in_parallel():
    order = []

    def slow(ctx):
        time.sleep(0.01)
        order.append("slow")

    def fast(ctx):
        order.append("fast")

    with task.start(async_mode=True):
        task.use(lambda ctx: order.append("begin"), lock=True)
        task.sync()
        task.use(task.serial(slow, fast))
        task.run(1)
    assert order[1:] == ["slow", "fast"]


def test_nested_middleware(started):
    out = []

    def child(ctx):
        out.append(1)
        yield
        out.append(3)

    def mother(ctx):
        out.append(0)
        child_back = task.wrap(child)(ctx)
        out.append(2)
        child_back()
        out.append(4)
        yield
        out.append(5)

    task.use(mother)
    task.run(1)
    assert out == [0, 1, 2, 3, 4, 5]


def test_use_lock_serialises_in_order():
    result = []

    def slow(ctx):
        time.sleep(0.05)
        result.append("slow")

    def fast(ctx):
        result.append("fast")

    with task.start(async_mode=True, n_async_workers=2):
        task.use(slow, lock=True)
        task.use(fast, lock=True)
        task.run(1)
    assert result[-1] == "fast" and sorted(result) == ["fast", "slow"]


def test_use_wrapper_wraps_earlier_and_later_middleware(started):
    calls = []

    def wrapper(fn):
        def wrapped(ctx):
            calls.append("wrapped")
            return fn(ctx)

        return wrapped

    task.use(step0)
    task.use_wrapper(wrapper)
    task.use(step1)
    task.run(1)
    assert calls == ["wrapped", "wrapped"] and task.ctx.pipeline == [0, 1]


def test_context_keep_and_renew():
    ctx = Context()
    ctx.keep("keep_me")
    ctx.keep_me = 1
    ctx.not_keep_me = 2
    renewed = ctx.renew()
    assert renewed.total_step == 1 and renewed.keep_me == 1 and "not_keep_me" not in renewed
    online = OnlineRLContext()
    online.env_step = 10
    assert online.renew().env_step == 10


def test_standalone_labels(started):
    assert "standalone" in task.labels
    assert task.match_labels("stand*")
    assert not task.router.is_active
