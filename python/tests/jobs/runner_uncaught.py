# SPDX-License-Identifier: MIT
"""DI-engine's test_uncaught_exception: node 0 raises; the runner call raises in the launcher."""
import sys

from ditask import Parallel, task
from ditask.parallel import JobFailed


def main():
    with task.start():
        if task.router.node_id == 0:
            raise Exception("uncaught exception")
        task.wait_for("never", timeout=60)


if __name__ == "__main__":
    try:
        Parallel.runner(n_parallel_workers=2, topology="mesh")(main)
    except JobFailed as e:
        print("runner raised: exit code %d" % e.exit_code, flush=True)
        sys.exit(0)
    print("runner returned normally", flush=True)
