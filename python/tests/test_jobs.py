# SPDX-License-Identifier: MIT
"""Python packages run by the ditask command, and Parallel.runner programs: real launchers,
worker processes and sockets (DI-engine's test_parallel and the distributed parts of test_task)."""
import os
import signal
import subprocess

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "greeting")


def test_greeting_example_prints_get_msg(ditask_job):
    # Without PYTHONPATH: bin/ditask puts its own package ditask on the workers' path.
    r = ditask_job("--package", os.path.join(EXAMPLE, "greeting.py"), "--main", "greeting.main",
                   "--parallel-workers", "3", env_without=("PYTHONPATH",))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("[node 0] Get msg: Hi") == 2, r.stdout


def test_remote_emits_arrive_once_in_order_and_never_at_the_sender(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.emit_remote", "--parallel-workers", "2")
    assert r.returncode == 0, r.stderr
    assert "node 0 got 200 in order" in r.stdout


def test_every_type_crosses_the_wire(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.types", "--parallel-workers", "2")
    assert r.returncode == 0, r.stderr
    assert "node 0 got every type" in r.stdout


def test_an_object_is_refused_with_a_hint(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.refuses_objects", "--parallel-workers", "1")
    assert r.returncode == 1
    assert "cannot send a value of type 'object' (argument 0) in event 'obj'" in r.stderr
    assert "allow_pickle('obj')" in r.stderr


def test_finish_of_one_node_ends_the_others_run(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.pipeline_until_finish", "--parallel-workers", "2")
    assert r.returncode == 0, r.stderr
    assert "node 1 stopped after step 2" in r.stdout and "node 0 stopped after step" in r.stdout


def test_a_handler_exception_names_node_event_and_traceback(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.handler_fails", "--parallel-workers", "2")
    assert r.returncode == 1
    assert "handler for event 'bad' failed: ZeroDivisionError: division by zero" in r.stderr
    assert 'jobs.py", line' in r.stderr and "Traceback (most recent call last)" in r.stderr
    assert "job failed: node 0" in r.stderr


def test_roles_reach_python_workers(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.roles", "--parallel-workers", "2",
                   "--roles", "learner:0,collector:1")
    assert r.returncode == 0, r.stderr
    assert "node 0 roles ['learner']" in r.stdout and "node 1 roles ['collector']" in r.stdout


def test_auto_recover_restarts_a_python_worker(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.attempt", "--parallel-workers", "2", "--auto-recover",
                   "--restart-backoff", "0.1")
    assert r.returncode == 0, r.stderr
    assert "node 1 attempt 1 done" in r.stdout and "first attempt fails" in r.stderr


def test_a_missing_entry_is_a_usage_error(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.nope", "--parallel-workers", "2")
    assert r.returncode == 2
    assert "ditask: error: cannot load entry 'jobs.nope' of Python package" in r.stderr
    assert "has no entry 'nope'" in r.stderr and "ditask: hint:" in r.stderr


def test_a_package_that_fails_to_import_is_a_usage_error(ditask_job, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_here\n")
    r = ditask_job("--package", str(broken), "--main", "main", "--parallel-workers", "2")
    assert r.returncode == 2
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in r.stderr


def test_an_unknown_name_keeps_the_cpp_lookup_error(ditask_job):
    r = ditask_job("--package", "no_such_package_anywhere", "--parallel-workers", "1")
    assert r.returncode == 2
    assert "ditask: error: cannot find package 'no_such_package_anywhere'" in r.stderr


def test_sigint_to_the_launcher_ends_python_workers():
    binary = os.environ.get("DITASK_BIN", "ditask")
    job = subprocess.Popen([binary, "--package", "jobs.py", "--main", "jobs.waits_forever", "--parallel-workers", "2"],
                           cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = 0
    while ready < 2:
        line = job.stdout.readline()
        assert line, job.stderr.read()
        ready += line.rstrip().endswith("ready")
    job.send_signal(signal.SIGINT)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 130, err


def test_runner_raises_in_the_launcher_when_a_worker_fails(python_job):
    r = python_job("runner_uncaught.py")
    assert r.returncode == 0, r.stderr
    assert "runner raised: exit code 1" in r.stdout
    assert "Exception: uncaught exception" in r.stderr


def test_runner_auto_recover(python_job):
    r = python_job("runner_recover.py")
    assert r.returncode == 0, r.stderr
    assert "node 0 saw the recovered node 1" in r.stdout and "runner returned 0" in r.stdout
    assert "P1 Error" in r.stderr


def test_remote_calls_between_python_workers(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.rpc_calls", "--parallel-workers", "2",
                   "--roles", "client:0,server:1")
    assert r.returncode == 0, r.stderr
    assert "node 0 rpc ok" in r.stdout


def test_group_collectives(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.groups", "--parallel-workers", "3")
    assert r.returncode == 0, r.stderr
    for node in range(3):
        assert "[node %d] node %d group [0, 1, 2] broadcast 2 sum [3.0, 3.0]" % (node, node) in r.stdout, r.stdout


def test_an_exception_leaving_the_with_block_broadcasts_a_failed_finish(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.failed_finish", "--parallel-workers", "2",
                   "--auto-recover", "--max-retries", "1", "--restart-backoff", "0.1")
    assert r.returncode == 0, r.stderr
    assert "node 1 learned that node 0 saw finish reasons ['failed']" in r.stdout, r.stdout


def test_a_pickled_value_is_refused_where_its_event_was_not_allowed(ditask_job):
    r = ditask_job("--package", "jobs.py", "--main", "jobs.pickle_refused", "--parallel-workers", "2")
    assert r.returncode == 1
    assert "event 'point2' carries a pickled value, and this node does not unpickle it" in r.stderr
    assert "unpickled" not in r.stdout
    # The error's hint (allow_pickle('point2')) is not shown: a handler's error keeps only its
    # message (HandlerError), in C++ modules too; an open defect, in the stop's note.


def test_an_interpreter_that_cannot_run_ditask_is_a_usage_error(ditask_job):
    env_python = {"DITASK_PYTHON": "/bin/false"}
    r = ditask_job("--package", "jobs.py", "--main", "jobs.roles", "--parallel-workers", "2", env_extra=env_python)
    assert r.returncode == 2
    assert "ditask: error: the Python interpreter '/bin/false' could not run ditask's worker (exit 1)" in r.stderr
    assert "ditask: hint: " in r.stderr


def test_router_pub_sub_between_workers_over_ipc_and_tcp(python_job):
    """DI-engine's test_parallel_run."""
    r = python_job("runner_pubsub.py")
    assert r.returncode == 0, r.stderr
    for protocol in ("ipc", "tcp"):
        assert "%s runner returned 0" % protocol in r.stdout, r.stdout
    assert r.stdout.count("[node 0] node 0 got the ping of node 1") == 2, r.stdout
    assert r.stdout.count("[node 1] node 1 got the ping of node 0") == 2, r.stdout
