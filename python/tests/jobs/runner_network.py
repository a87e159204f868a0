# SPDX-License-Identifier: MIT
"""DI-engine's test_parallel_pipeline and test_disconnected as Parallel.runner programs:
`runner_network.py pipeline` or `runner_network.py disconnected`."""
import sys
import threading
import time

from ditask import Parallel, task


def pipeline():
    """test_parallel_pipeline: each step sleeps a little and emits "count" to the peer only."""
    counts = []
    counted = threading.Event()
    with task.start():
        task.on("count", lambda: (counts.append(1), counted.set()))

        def step(ctx):
            time.sleep(0.02)
            task.emit("count", only_remote=True)

        task.use(step)
        task.run(10)  # ends early once the peer finished: each node runs at least one step
        assert counted.wait(60), "no count from the peer"  # not gone before the peer's first one came
        print("node %d counted some" % task.router.node_id, flush=True)


def disconnected():
    """test_disconnected: node 0 waits for one greeting and leaves; node 1 goes on emitting to it,
    10 times 0.1 s apart, without an error."""
    with task.start():
        if task.router.node_id == 0:
            assert task.wait_for("greeting", timeout=60) is not None
            print("node 0 got a greeting and leaves", flush=True)
            return
        for _ in range(10):
            task.emit("greeting", "Hi")
            time.sleep(0.1)
        print("node 1 emitted all 10", flush=True)


if __name__ == "__main__":
    entry = {"pipeline": pipeline, "disconnected": disconnected}[sys.argv[1]]
    code = Parallel.runner(n_parallel_workers=2)(entry)
    print("runner returned %d" % code, flush=True)
