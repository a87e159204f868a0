# SPDX-License-Identifier: MIT
"""Shared fixtures: the ditask binary under test (DITASK_BIN, set by ctest) and a job runner."""
import os
import subprocess
import sys

import pytest

from ditask import task

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def started():
    """A started standalone task, stopped afterwards whatever the test did."""
    task.start()
    yield task
    task.stop()


@pytest.fixture
def ditask_job(tmp_path):
    """Runs `ditask ARGS` in tmp_path with the jobs/ scripts beside; returns the CompletedProcess."""

    def run(*args, timeout=120, env_without=(), env_extra=None):
        binary = os.environ.get("DITASK_BIN", "ditask")
        env = {k: v for k, v in os.environ.items() if k not in env_without}
        env.update(env_extra or {})
        return subprocess.run([binary, *args], cwd=os.path.join(HERE, "jobs"), capture_output=True, text=True,
                              timeout=timeout, env=env)

    return run


@pytest.fixture
def python_job(tmp_path):
    """Runs `python3 jobs/SCRIPT ARGS` (a Parallel.runner program); returns the CompletedProcess."""

    def run(script, *args, timeout=120):
        return subprocess.run([sys.executable, os.path.join(HERE, "jobs", script), *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=timeout)

    return run
