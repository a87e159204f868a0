# SPDX-License-Identifier: MIT
"""Remote objects from Python (rpc.define_class / remote / local_ref / RRef), in real jobs."""
import pytest

from ditask import Error, rpc


def test_remote_objects_between_python_workers(ditask_job):
    r = ditask_job("--package", "remote_objects.py", "--main", "remote_objects.main", "--parallel-workers", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[node 0] node 0 local_ref ok" in r.stdout
    assert "[node 1] node 1 remote objects ok" in r.stdout


class Plain:
    def get(self):
        return 1


def test_class_definition_errors_are_raised_at_once():
    with pytest.raises(Error, match="class 'Plain' has no public method 'nope' to run concurrently"):
        rpc.define_class("Plain", Plain, concurrent=("nope",))
    with pytest.raises(Error, match="was not defined with rpc.define_class"):
        rpc.remote(0, Plain)
    with pytest.raises(Error, match="needs a name without spaces, got 'a b'"):
        rpc.define_class("a b", Plain)
    rpc.define_class("Plain", Plain)
    with pytest.raises(Error, match="not a ditask worker"):
        rpc.local_ref(Plain())
