# SPDX-License-Identifier: MIT
"""DI-engine's test_auto_recover: node 1 fails once and is restarted; node 0 sees the recovered one."""
import os

from ditask import Parallel, task


def main():
    with task.start():
        if task.router.node_id == 0:
            while True:
                args, _ = task.wait_for("greeting_0", timeout=60)
                if args[0] == "recovered_p1":
                    print("node 0 saw the recovered node 1", flush=True)
                    return
        if os.environ.get("DITASK_ATTEMPT") == "0":
            task.emit("greeting_0", "")
            raise RuntimeError("P1 Error")
        task.emit("greeting_0", "recovered_p1")


if __name__ == "__main__":
    code = Parallel.runner(n_parallel_workers=2, auto_recover=True, max_retries=1, restart_backoff=0.1)(main)
    print("runner returned %d" % code, flush=True)
