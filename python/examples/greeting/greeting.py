# SPDX-License-Identifier: MIT
"""DI-engine's greeting, as its docs write it, on ditask:
``ditask --package greeting.py --main greeting.main --parallel-workers 3``."""
from ditask import task


def main():
    with task.start(async_mode=False):
        if task.router.node_id == 0:
            task.on("greeting", lambda msg: print("Get msg: %s" % msg))
        else:
            task.emit("greeting", "Hi")
        task.use(lambda ctx: None)
        task.run(10)
        print("node %d ran %d steps" % (task.router.node_id, task.ctx.total_step + 1))
