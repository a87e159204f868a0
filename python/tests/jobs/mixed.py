# SPDX-License-Identifier: MIT
"""The Python side of test_mixed.py: node 1, beside the C++ module cpp_peer as node 0."""
from ditask import rpc, task


def main():
    rpc.define("py_mul", lambda a, b: a * b)
    with task.start():
        values = task.waiter("cpp_values")
        assert rpc.call(0, "cpp_add", 2, 3) == 5
        assert rpc.call(0, "cpp_sum", [1.5, 2.5]) == 4.0
        tally = rpc.remote(0, "Tally", args=(5,))  # a C++ object on node 0
        assert tally.rpc_sync().add(3) == 8 and tally.to_here() == {"total": 8}
        assert rpc.call(0, "tally_total", tally) == 8  # the handle back to C++ as an RRef<Tally>
        task.emit_to_node(0, "py_values", "from Python", 42, [0.5, 1.5], b"\x01\x02", flag=True)
        args, kwargs = values.wait(60)
        assert args == ("from C++", {"a": 1, "b": 2}, b"\x01\x02\x03") and kwargs == {"pi": 3.25}, (args, kwargs)
        print("python got cpp_values", flush=True)
        task.emit_to_node(0, "done")
