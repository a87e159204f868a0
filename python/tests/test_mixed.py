# SPDX-License-Identifier: MIT
"""One job of a C++ module and a Python package: two launchers (one per package) meeting at a
file rendezvous; events and remote calls cross between the languages both ways."""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def test_cpp_and_python_workers_in_one_job(tmp_path):
    binary = os.environ.get("DITASK_BIN", "ditask")
    cpp_peer = os.environ["DITASK_CPP_PEER"]
    common = ["--parallel-workers", "1", "--world-size", "2", "--run-id", "mixed",
              "--rendezvous", "file://" + str(tmp_path)]
    cpp = subprocess.Popen([binary, "--package", cpp_peer, "--main", "peer", "--node-ids", "0", *common],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    py = subprocess.run([binary, "--package", os.path.join(HERE, "jobs", "mixed.py"), "--main", "mixed.main",
                         "--node-ids", "1", *common], capture_output=True, text=True, timeout=120)
    cpp_out, cpp_err = cpp.communicate(timeout=120)
    assert py.returncode == 0, py.stderr
    assert cpp.returncode == 0, cpp_err
    assert "[node 1] python got cpp_values" in py.stdout
    assert "[node 0] cpp got py_values: from Python 42 2 values, 2 bytes, flag=true" in cpp_out
    assert "[node 0] cpp called py_mul: 42" in cpp_out


def test_cartpole_learner_in_cpp_and_collectors_in_python_solve_it(tmp_path):
    """The README's mixed job: the C++ learner of `--package cartpole` and three Python collectors
    (python/examples/cartpole/collector.py), one launcher each at a file rendezvous."""
    binary = os.environ.get("DITASK_BIN", "ditask")
    collector = os.path.join(os.path.dirname(HERE), "examples", "cartpole", "collector.py")
    common = ["--parallel-workers", "1", "--world-size", "4", "--roles", "learner:0,collector:1-", "--run-id",
              "cartpole", "--rendezvous", "file://" + str(tmp_path)]
    learner = subprocess.Popen([binary, "--package", "cartpole", "--main", "main", "--node-ids", "0", *common],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    collectors = [subprocess.Popen([binary, "--package", collector, "--main", "collector.main", "--node-ids", str(n),
                                    *common], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for n in (1, 2, 3)]
    out, err = learner.communicate(timeout=600)
    assert learner.returncode == 0, err
    assert "[node 0] learner: 3 collectors, synchronous rounds, seed 0" in out
    assert "[node 0] Solved! Running reward is now" in out, out[-2000:]
    for n, c in zip((1, 2, 3), collectors):
        c_out, c_err = c.communicate(timeout=120)
        assert c.returncode == 0, c_err
        assert "[node %d] collector %d (Python):" % (n, n) in c_out
