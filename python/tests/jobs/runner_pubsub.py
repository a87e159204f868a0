# SPDX-License-Identifier: MIT
"""DI-engine's test_parallel_run: Parallel-level pub/sub (task.router.on / emit) between two
workers, over Unix sockets ("ipc") and then TCP. Each worker can only be satisfied by the other's
emit: router events never reach their sender, nor the task's own handlers of the same name, and
task.off("*") leaves the router's handlers alone."""
import sys
import threading

from ditask import Parallel, task


def main():
    got = []
    pinged = threading.Event()

    def on_ping(key, sender):
        got.append((key, sender))
        pinged.set()

    with task.start():
        task.on("test_callback", lambda *a: got.append(("task handler", a)))  # must stay silent
        task.router.on("test_callback", on_ping)
        task.on("other", print)
        task.off("*")  # the task's handlers only: the router's stay (its own event loop in DI-engine)
        task.router.emit("test_callback", "ping", task.router.node_id)
        assert pinged.wait(60), "no ping from the peer"
        task.sync()
        other = 1 - task.router.node_id
        assert got == [("ping", other)], got
        print("node %d got the ping of node %d" % (task.router.node_id, other), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["redis"]:  # runner_pubsub.py redis PORT: over a Redis server
        code = Parallel.runner(n_parallel_workers=2, mq_type="redis", redis_port=int(sys.argv[2]))(main)
        print("redis runner returned %d" % code, flush=True)
    else:
        for protocol in ("ipc", "tcp"):
            code = Parallel.runner(n_parallel_workers=2, protocol=protocol, startup_interval=0.1)(main)
            print("%s runner returned %d" % (protocol, code), flush=True)
