# SPDX-License-Identifier: MIT
"""Training curves for TensorBoard (``from ditask import metrics``), as C++'s ``ditask::metrics()``
writes them: with ``ditask --metrics-dir DIR`` each worker writes its records to
``DIR/node-<id>/events.out.tfevents.*``, one run per node for ``tensorboard --logdir DIR``; a plain
program writes where ``DITASK_METRICS_DIR`` says. Without either, each call returns at once.
Each record is written when it is recorded, so a worker that crashes loses none."""
from . import _ditask


def scalar(tag, step, value):
    """Records ``value`` of the curve ``tag`` ("reward", "train/loss") at ``step`` (kept as a
    32-bit float). Never raises for a failed write (logged once)."""
    _ditask.metrics_scalar(str(tag), int(step), float(value))


def histogram(tag, step, values):
    """Records the distribution of ``values`` (a sequence or NumPy array of numbers) at ``step``:
    30 buckets of equal width between their minimum and maximum."""
    if hasattr(values, "ravel"):  # a NumPy array of any shape
        values = values.ravel().tolist()
    _ditask.metrics_histogram(str(tag), int(step), [float(v) for v in values])


def enabled():
    """True when recorded values go to a file."""
    return _ditask.metrics_enabled()
