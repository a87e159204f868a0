# SPDX-License-Identifier: MIT
"""The Python side of `scripts/bench.sh python`: the same 64-byte round trip and one-way stream
as the C++ module bench_mesh's `rtt` and `stream`, between two Python workers. Node 0 prints one
line `bench_python <figure> key=value ...`. Arguments after --: rounds, warmup, count."""
import sys
import threading
import time

from ditask import task


def _params():
    values = {"rounds": 20000, "warmup": 2000, "count": 200000}
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        values[key] = int(value)
    return values


def rtt():
    p = _params()
    total = p["rounds"] + p["warmup"]
    blob = b"\x5a" * 64
    with task.start():
        if task.router.node_id == 1:
            bye = task.waiter("bp.bye")
            task.on("bp.ping", lambda data: task.emit_to_node(0, "bp.pong", data))
            task.emit_to_node(0, "bp.ready")
            bye.wait()
            return
        latencies = []
        finished = threading.Event()
        state = {"done": 0, "sent": 0}

        def on_pong(data):
            now = time.perf_counter_ns()
            state["done"] += 1
            if state["done"] > p["warmup"]:
                latencies.append(now - state["sent"])
            if state["done"] == total:
                finished.set()
                return
            state["sent"] = time.perf_counter_ns()
            task.emit_to_node(1, "bp.ping", data)

        task.wait_for("bp.ready", timeout=60)
        task.on("bp.pong", on_pong)
        state["sent"] = time.perf_counter_ns()
        task.emit_to_node(1, "bp.ping", blob)
        finished.wait(600)
        task.emit_to_node(1, "bp.bye")
        latencies.sort()
        n = len(latencies)
        print("bench_python rtt rounds=%d p50_us=%.1f p99_us=%.1f" % (n, latencies[n // 2] / 1e3,
                                                                      latencies[n * 99 // 100] / 1e3), flush=True)


def stream():
    p = _params()
    blob = b"\x5a" * 64
    with task.start():
        if task.router.node_id == 1:
            bye = task.waiter("bp.bye")
            got = {"events": 0}

            def on_data(data):
                got["events"] += 1

            task.on("bp.data", on_data)
            task.on("bp.end", lambda: task.emit_to_node(0, "bp.report", got["events"], time.perf_counter_ns()))
            task.emit_to_node(0, "bp.ready")
            bye.wait()
            return
        report = task.waiter("bp.report")
        task.wait_for("bp.ready", timeout=60)
        start = time.perf_counter_ns()
        for _ in range(p["count"]):
            task.emit("bp.data", blob, only_remote=True)
        task.emit("bp.end", only_remote=True)
        (events, last_ns), _ = report.wait(600)
        task.emit_to_node(1, "bp.bye")
        seconds = (last_ns - start) / 1e9
        print("bench_python stream count=%d delivered=%d events_per_s=%.0f" % (p["count"], events, p["count"] / seconds),
              flush=True)


def noop():
    """Returns at once: the start-time figure (the C++ counterpart is the faults module's noop)."""
