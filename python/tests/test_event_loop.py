# SPDX-License-Identifier: MIT
"""DI-engine's test_event_loop, on ditask's event bus (standalone task: local events only)."""
import pytest

from ditask import Error, task


def test_on_counts_every_emit_and_off_stops_it(started):
    counter = []
    task.on("count", lambda n: counter.append(n))
    for i in range(5):
        task.emit("count", i)
    _sync_handlers()
    assert sum(counter) == 10
    task.off("count")
    task.emit("count", 100)
    _sync_handlers()
    assert sum(counter) == 10


def test_once_runs_for_the_next_emit_only(started):
    counter = []
    task.once("once", lambda n: counter.append(n))
    task.once("once", lambda n: counter.append(n))
    task.emit("once", 10)
    task.emit("once", 10)
    _sync_handlers()
    assert counter == [10, 10]


def test_handlers_run_in_emit_order(started):
    seen = []
    task.on("seq", seen.append)
    for i in range(500):
        task.emit("seq", i)
    _sync_handlers()
    assert seen == list(range(500))


def test_off_with_a_function_removes_only_that_one(started):
    a, b = [], []
    fa, fb = a.append, b.append
    task.on("ev", fa)
    task.on("ev", fb)
    task.off("ev", fa)
    task.emit("ev", 1)
    _sync_handlers()
    assert (a, b) == ([], [1])


def test_a_handler_exception_is_raised_by_a_later_emit(started, capfd):
    def fails(_):
        raise ValueError("handler broke")

    task.on("bad", fails)
    task.emit("bad", 1)
    with pytest.raises(Error, match="handler for event 'bad' failed: ValueError: handler broke"):
        _sync_handlers()
    assert "Traceback (most recent call last)" in capfd.readouterr().err


def test_wait_for_returns_args_and_kwargs_and_times_out(started):
    task.once("go", lambda: task.emit("reply", 1, "two", k=3.5))
    task.emit("go")
    assert task.wait_for("reply", timeout=30) == ((1, "two"), {"k": 3.5})
    assert task.wait_for("never", timeout=0.05) is None
    with pytest.raises(TimeoutError, match="Timeout when waiting for event: never"):
        task.wait_for("never", timeout=0.05, ignore_timeout_exception=False)


def test_calls_on_a_stopped_task_are_errors():
    with pytest.raises(Error, match="not running"):
        task.use(lambda ctx: None)
    with pytest.raises(Error):
        task.emit("x")


def _sync_handlers():
    """Waits until every handler queued so far ran."""
    task.sync()
