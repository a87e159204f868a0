# SPDX-License-Identifier: MIT
"""Remote objects between Python workers (test_remote.py): node 0 owns Counters that node 1
creates there and calls, passes to node 2, copies and releases; node 0 hands out one of its own."""
import time

from ditask import Error, RpcError, allow_pickle, rpc, task


class Counter:
    live = 0  # objects alive on this node

    def __init__(self, start=0, step=1):
        Counter.live += 1
        self.value, self.step = start, step

    def add(self, n=None):
        self.value += self.step if n is None else n
        return self.value

    def peek(self):
        return self.value

    def fails(self):
        raise KeyError("no such key")

    def __del__(self):
        Counter.live -= 1


class Box:
    pass


class OldShape:
    def old_method(self):
        return "old"


class NewShape:
    def new_method(self):
        return "new"


def expect_rpc_error(kind, call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except RpcError as e:
        assert e.kind == kind, (e.kind, str(e))
        return e
    raise AssertionError("no RpcError from %r" % call)


def emit_handle(counter):
    """Node 2: an event cannot carry a handle, also while serving the call that brought it."""
    try:
        task.emit("handle", counter)
    except Error as e:
        return str(e)
    return "sent"


def owner_checks():
    """Node 0: a handle to one of its own objects, used by node 1 through a call back here."""
    mine = rpc.local_ref(Counter(1))
    assert mine.is_owner() and mine.owner() == 0 and mine.local_value().value == 1
    assert mine.to_here() is mine.local_value()  # on its owner, the object itself
    assert rpc.call(1, "add_through", mine, 5) == 6  # node 1 calls it here, nested in this call
    assert mine.local_value().value == 6
    print("node 0 local_ref ok", flush=True)


def caller_checks():
    """Node 1: creates Counters on node 0 and uses them."""
    c = rpc.remote(0, Counter, args=(10,), kwargs={"step": 2})
    assert c.owner() == 0 and not c.is_owner() and c.class_name == "Counter", repr(c)
    assert repr(c).startswith("RRef(Counter #") and repr(c).endswith(" on node 0)"), repr(c)
    assert c.rpc_sync().add() == 12
    assert c.rpc_async().add(5).wait() == 17
    assert rpc.call(2, "add_through", c, 3) == 20  # the handle travels to node 2, which calls node 0
    assert c.rpc_sync(timeout=30).peek() == 20
    assert rpc.remote(0, "Counter").rpc_sync().add() == 1  # by name, default arguments
    e = expect_rpc_error("remote_exception", c.rpc_sync().fails)
    assert "KeyError" in e.reason and e.node == 0, e.reason
    e = expect_rpc_error("unknown_function", c.rpc_sync().nope)
    assert "method 'nope' of class 'Counter'" in str(e), str(e)
    expect_rpc_error("unknown_function", rpc.remote, 0, "NoSuchClass")
    shape = rpc.remote(0, "Shape")
    assert shape.rpc_sync().new_method() == "new"
    expect_rpc_error("unknown_function", shape.rpc_sync().old_method)
    e = expect_rpc_error("remote_exception", rpc.remote(0, Box).to_here)  # node 0 does not pickle a Box
    assert "cannot send a value of type 'Box' in event 'Box.to_here'" in e.reason, e.reason
    try:
        c.to_here()  # node 0 pickles a Counter; here it is not allowed yet
        raise AssertionError("a pickled value was taken")
    except Error as e:
        assert "event 'Counter.to_here' carries a pickled value" in str(e), str(e)
    try:
        c.local_value()
        raise AssertionError("local_value() off its owner")
    except Error as e:
        assert "is on node 0 only" in str(e), str(e)
    try:
        c.rpc_sync().add(object())
        raise AssertionError("an object argument was sent")
    except Error as e:
        assert "cannot send a value of type 'object' (argument 0) in event 'Counter.add'" in str(e), str(e)
    extra = rpc.remote_async(0, Counter)
    assert extra.wait() is extra.wait()  # one handle, however often waited on
    extra = extra.wait()
    try:
        c.rpc_sync().add([extra, object()])  # the object fails before the handle was registered
        raise AssertionError("an object argument was sent")
    except Error as e:
        assert "cannot send a value of type 'object' (argument 0[1])" in str(e), str(e)
    try:
        task.emit("handle", extra)
        raise AssertionError("a handle went out in an event")
    except Error as e:
        assert "cannot send a remote-object handle (RRef) (argument 0) in event 'handle'" in str(e), str(e)
    assert "cannot send a remote-object handle" in rpc.call(2, "emit_handle", extra)  # also inside a served call
    del extra
    allow_pickle("Counter")
    copy = c.to_here()
    assert isinstance(copy, Counter) and copy.value == 20 and copy.step == 2
    assert rpc.call(0, "live") >= 1  # c's (node 0's own went with its last handle)
    del c, copy
    deadline = time.monotonic() + 60
    while rpc.call(0, "live") != 0:  # each went with its last handle
        assert time.monotonic() < deadline, "node 0 still holds %d Counters" % rpc.call(0, "live")
        time.sleep(0.01)
    print("node 1 remote objects ok", flush=True)


def main():
    rpc.define_class("Counter", Counter, concurrent=("peek",))
    rpc.define_class("Box", Box)
    rpc.define_class("Shape", OldShape)
    rpc.define_class("Shape", NewShape)  # a new definition: its methods replace the old ones
    rpc.define("live", lambda: Counter.live)
    rpc.define("add_through", lambda counter, n: counter.rpc_sync().add(n))
    rpc.define("emit_handle", emit_handle)
    with task.start():
        node = task.router.node_id
        owner_done = task.waiter("owner_done")
        done = task.waiter("done")
        if node == 0:
            allow_pickle("Counter")
            owner_checks()
            task.emit("owner_done")
            done.wait(120)
        elif node == 1:
            owner_done.wait(120)
            caller_checks()
            task.emit("done")
        else:
            done.wait(120)
