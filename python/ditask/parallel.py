# SPDX-License-Identifier: MIT
"""``Parallel.runner``: DI-engine's way to run a program's ``main`` as a supervised job."""
import sys

from . import _ditask


class JobFailed(RuntimeError):
    """Raised in the launching process when a worker failed; ``exit_code`` is the job's."""

    def __init__(self, exit_code):
        super().__init__(f"ditask job failed with exit code {exit_code} (the summary above says which worker and why)")
        self.exit_code = exit_code


def _list(value, kind):
    if value is None:
        return None
    if isinstance(value, str):
        return [kind(v) for v in value.split(",") if v]
    if isinstance(value, (list, tuple, set)):
        return [kind(v) for v in value]
    return [kind(value)]


class Parallel:
    """DI-engine's Parallel: ``Parallel.runner(n_parallel_workers=2)(main)``."""

    @staticmethod
    def runner(n_parallel_workers=1, attach_to=None, protocol="tcp", address="127.0.0.1", ports=None,
               topology="mesh", labels=None, node_ids=None, auto_recover=False, max_retries=3,
               startup_interval=0.0, roles=None, log_dir=None, log_level="warn", timeout=0.0,
               grace_period=10.0, restart_backoff=1.0, mq_type="nng", redis_host="127.0.0.1", redis_port=6379,
               world_size=None):
        """A runner: called with `main`, it re-executes this program as `n_parallel_workers`
        workers, each running main() in a job, supervises them as the ditask command does, and
        returns 0 once all succeeded (raising JobFailed otherwise). In a worker it runs main()
        and exits with its outcome, so code after the call runs only in the launching process."""
        if mq_type not in ("nng", "mesh", "redis"):
            raise ValueError(f"mq_type {mq_type!r}: 'nng' (ditask's mesh; 'mesh' too) or 'redis'")
        options = {
            "n_parallel_workers": int(n_parallel_workers),
            "topology": topology,
            "protocol": protocol,
            "address": address,
            "ports": _list(ports, int),
            "node_ids": _list(node_ids, int),
            "attach_to": _list(attach_to, str),
            "labels": _list(labels, str),
            "auto_recover": bool(auto_recover),
            "max_retries": int(max_retries) if max_retries != float("inf") else 1000000,
            "startup_interval": float(startup_interval),
            "roles": roles,
            "log_dir": log_dir,
            "log_level": log_level,
            "timeout": float(timeout),
            "grace_period": float(grace_period),
            "restart_backoff": float(restart_backoff),
            "world_size": int(world_size) if world_size else 0,
            "mq_type": "redis" if mq_type == "redis" else "nng",
            "redis_host": str(redis_host),
            "redis_port": int(redis_port),
        }

        def _runner(main):
            code = _ditask.run_parallel(options, main)
            if _ditask.in_worker():
                sys.stdout.flush()
                sys.exit(code)
            if code != 0:
                raise JobFailed(code)
            return code

        return _runner

    @staticmethod
    def in_worker():
        """True in a process a runner started as one of its workers."""
        return _ditask.in_worker()
