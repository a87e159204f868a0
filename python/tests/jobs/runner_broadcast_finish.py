# SPDX-License-Identifier: MIT
"""DI-engine's test_broadcast_finish: two Parallel.runner programs in one job. Program A runs
node 0 (mesh, tcp, PORT); program B runs nodes 1 and 2 (topology alone, ports PORT+1 and
PORT+2, attached to A; 1 and 2 are linked only through node 0). Node 1 sets finish at step 1;
nodes 0 and 2 run until it reaches them (node 2 by node 0's own finish, as node 0 stops).
Usage: runner_broadcast_finish.py a|b PORT"""
import sys
import time

from ditask import Parallel, task


def main():
    with task.start():
        def tick(ctx):
            time.sleep(0.01)
            if task.router.node_id == 1 and ctx.total_step == 1:
                task.finish = True

        task.use(tick)
        task.run(2 if task.router.node_id == 1 else sys.maxsize)  # nodes 0 and 2 end only by the finish
        print("node %d ended after step %d" % (task.router.node_id, task.ctx.total_step), flush=True)


if __name__ == "__main__":
    which, port = sys.argv[1], int(sys.argv[2])
    if which == "a":
        # world_size=3: node 0's start() waits for the attached nodes, so it cannot end (by node 1's
        # finish) before node 2, reached only through it, joined.
        runner = Parallel.runner(n_parallel_workers=1, protocol="tcp", address="127.0.0.1", ports=[port],
                                 topology="mesh", world_size=3)
    else:
        runner = Parallel.runner(n_parallel_workers=2, protocol="tcp", address="127.0.0.1",
                                 ports=[port + 1, port + 2], topology="alone", node_ids=[1, 2],
                                 attach_to="tcp://127.0.0.1:%d" % port)
    print("runner %s returned %d" % (which, runner(main)), flush=True)
