# SPDX-License-Identifier: MIT
"""Entries the job tests run with `ditask --package jobs.py --main jobs.<entry>`."""
import os
import sys
import threading

import numpy as np

from ditask import allow_pickle, task

COUNT = 200


class Point:
    def __init__(self, x):
        self.x = x


def emit_remote():
    """Node 1 sends COUNT numbered events only_remote; node 0 must get each once, in order."""
    with task.start():
        if task.router.node_id == 0:
            seen = []
            done = task.waiter("done")
            task.on("greeting", seen.append)
            done.wait(60)
            task.sync()
            assert seen == list(range(COUNT)), seen[:20]
            print("node 0 got %d in order" % len(seen), flush=True)
        else:
            own = []
            task.on("greeting", own.append)
            for i in range(COUNT):
                task.emit("greeting", i, only_remote=True)
            task.emit("done", only_remote=True)
            task.sync()
            assert own == [], "a remote emit reached its own node"


VALUES = [None, True, -7, 2**63 + 5, 1.5, "text", b"\x00\xffbytes", [1, [2, "x"]], {"k": {"n": None}}]


def types():
    """Every plain type and NumPy arrays cross the wire unchanged; objects only when pickling is allowed."""
    allow_pickle("point")
    with task.start():
        if task.router.node_id == 0:
            args, kwargs = task.wait_for("values", timeout=60)
            assert list(args) == VALUES and kwargs == {"named": [1.0]}, (args, kwargs)
            (array, empty), _ = task.wait_for("arrays", timeout=60)
            assert array.dtype == np.float32 and array.shape == (3, 4) and array.sum() == 66.0
            assert empty.dtype == np.int64 and empty.shape == (0, 2)
            (point,), _ = task.wait_for("point", timeout=60)
            assert isinstance(point, Point) and point.x == 5
            print("node 0 got every type", flush=True)
        else:
            task.emit_to_node(0, "values", *VALUES, named=[1.0])
            transposed = np.arange(12, dtype=np.float32).reshape(4, 3).T.copy().T.T  # not C-contiguous
            task.emit_to_node(0, "arrays", np.ascontiguousarray(transposed.reshape(3, 4)), np.zeros((0, 2), np.int64))
            task.emit_to_node(0, "point", Point(5))


def refuses_objects():
    with task.start():
        task.emit("obj", object())


def pipeline_until_finish():
    """Node 1 runs 3 steps and stops; node 0 runs until node 1's finish arrives."""
    with task.start():
        task.use(lambda ctx: None)
        task.run(3 if task.router.node_id == 1 else sys.maxsize)
        print("node %d stopped after step %d" % (task.router.node_id, task.ctx.total_step), flush=True)


def handler_fails():
    with task.start():
        if task.router.node_id == 0:
            task.on("bad", lambda v: v / 0)
            task.wait_for("never", timeout=60)
        else:
            task.emit("bad", 1)


def waits_forever():
    with task.start():
        print("node %d ready" % task.router.node_id, flush=True)
        task.wait_for("never")


def roles():
    with task.start():
        print("node %d roles %s" % (task.router.node_id, sorted(task.router.roles)), flush=True)


def attempt():
    with task.start():
        if os.environ.get("DITASK_ATTEMPT", "0") == "0" and task.router.node_id == 1:
            raise RuntimeError("first attempt fails")
        print("node %d attempt %s done" % (task.router.node_id, os.environ.get("DITASK_ATTEMPT")), flush=True)


def rpc_calls():
    """Node 1 serves; node 0 calls: values, kwargs, arrays, errors, 64 in flight, by role."""
    from ditask import RpcError, rpc

    rpc.define("add", lambda a, b, scale=1: (a + b) * scale)
    rpc.define("fails", lambda: int("nope"))
    rpc.define("shape", lambda array: list(array.shape))

    @rpc.define("nothing")
    def nothing():
        pass

    with task.start():
        if task.router.node_id == 0:
            assert rpc.call(1, "add", 2, 3) == 5
            assert rpc.call(1, "add", 2, 3, scale=10) == 50
            assert rpc.rpc_sync(1, "add", args=(1, 1)) == 2 and rpc.rpc_sync(1, nothing) is None
            assert rpc.call(1, "shape", np.zeros((2, 5), np.float32)) == [2, 5]
            futures = [rpc.call_async(1, "add", i, i) for i in range(64)]
            assert [f.wait() for f in futures] == [2 * i for i in range(64)]
            assert rpc.call("server", "add", 1, 2) == 3
            try:
                rpc.call(1, "fails")
                raise AssertionError("no error")
            except RpcError as e:
                assert e.kind == "remote_exception" and e.node == 1 and "ValueError" in e.reason, (e.kind, e.reason)
            try:
                rpc.call(1, "no_such_function")
                raise AssertionError("no error")
            except RpcError as e:
                assert e.kind == "unknown_function", e.kind
            stats = rpc.stats()
            assert stats["calls"] == 72 and stats["failed"] == 2, stats
            print("node 0 rpc ok", flush=True)
            task.emit_to_node(1, "done")
        else:
            task.wait_for("done", timeout=60)


def groups():
    """Every member: a barrier, a broadcast from the last member, a sum over the members."""
    with task.start():
        group = task.group("worker")
        group.barrier(timeout=60)
        got = group.broadcast({"from": task.router.node_id}, root=len(group) - 1)
        total = group.all_reduce([1.0, float(task.router.node_id)])
        print("node %d group %s broadcast %s sum %s" % (task.router.node_id, group.members, got["from"], total),
              flush=True)


def failed_finish():
    """An exception leaving `with task.start()` broadcasts finish with reason "failed": node 1's
    first attempt raises; node 0 tells its restarted second attempt what finish reasons it saw."""
    with task.start():
        if task.router.node_id == 0:
            reasons = []
            task.on("finish", lambda *args, **kwargs: reasons.append(kwargs.get("reason")))
            rejoined = threading.Event()  # a handler, not a wait_for per join: none is missed between two
            task.on("ditask.peer_joined", lambda **kw: rejoined.set() if kw["attempt"] == 1 else None)
            if any(p["node_id"] == 1 and p["attempt"] == 1 for p in task.router.peers()):
                rejoined.set()  # it came back before the handler was there (a busy machine)
            assert rejoined.wait(60), "node 1 did not come back"
            task.emit_to_node(1, "reasons", reasons)
            task.wait_for("done", timeout=60)
        elif os.environ.get("DITASK_ATTEMPT") == "0":
            raise RuntimeError("fails inside with")
        else:
            (reasons,), _ = task.wait_for("reasons", timeout=60)
            print("node 1 learned that node 0 saw finish reasons %s" % reasons, flush=True)
            task.emit_to_node(0, "done")


def pickle_refused():
    """Node 1 pickles an object for "point2"; node 0 never allowed that event, so it refuses it."""
    if os.environ.get("DITASK_NODE_ID") == "1":
        allow_pickle("point2")
    with task.start():
        if task.router.node_id == 0:
            task.on("point2", lambda point: print("unpickled", point, flush=True))
            task.wait_for("never", timeout=60)
        else:
            task.emit_to_node(0, "point2", Point(5))


def metrics():
    """Each node records a curve and a histogram (ditask --metrics-dir)."""
    from ditask import metrics as m

    with task.start():
        node = task.router.node_id
        assert m.enabled()
        for step in range(3):
            m.scalar("reward", step, 10.0 * node + step)
        m.histogram("weights", 2, np.arange(6, dtype=np.float32).reshape(2, 3))
