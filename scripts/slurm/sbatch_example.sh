#!/bin/bash
# SPDX-License-Identifier: MIT
# The CartPole job on a Slurm cluster: one ditask launcher per node (one Slurm task per node),
# each starting --parallel-workers workers; the first worker of the first node is the learner,
# every other worker a collector. Submit it with
#   sbatch scripts/slurm/sbatch_example.sh [module arguments, e.g. seed=3]
# ditask must be on PATH on every node (or set DITASK=/path/to/ditask); the nodes must reach each
# other by the names in the job's host list. Launcher options can also come from the environment
# (DITASK_LAUNCH_<NAME>, e.g. DITASK_LAUNCH_HOSTS_FILE), which sbatch passes on to srun.
#SBATCH --job-name=ditask-cartpole
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --time=00:10:00
set -euo pipefail
DITASK="${DITASK:-ditask}"
# The workers listen on the nodes' own addresses: a shared secret keeps strangers out of the mesh.
if [[ -z "${DITASK_TOKEN:-}" ]]; then
  DITASK_TOKEN="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  export DITASK_TOKEN
fi
# --kill-on-bad-exit: a task that fails ends the step (ditask ends its own workers together).
exec srun --kill-on-bad-exit=1 "$DITASK" --platform slurm --parallel-workers 4 \
  --roles learner:0,collector:1- --package cartpole --main main -- "$@"
