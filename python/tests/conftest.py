# SPDX-License-Identifier: MIT
"""Shared fixtures: the ditask binary under test (DITASK_BIN, set by ctest) and a job runner."""
import os
import shutil
import socket
import subprocess
import sys
import time

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


def _answers_ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture
def redis_port(tmp_path):
    """A redis-server of this test's own on a free loopback port, without persistence; its port.
    Skips where redis-server is not installed."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian's redis-server)")
    for _ in range(10):  # a free port can be taken between choosing it and the server's bind
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", str(tmp_path)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while server.poll() is None and not _answers_ping(port):
            if time.monotonic() > deadline:
                server.kill()
                pytest.fail("redis-server on port %d did not answer PING within 60 s" % port)
            time.sleep(0.01)
        if server.poll() is None:
            yield port
            server.terminate()
            server.wait(timeout=30)
            return
    pytest.fail("redis-server did not start on a free port in 10 tries")
