#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ditask under a real Slurm: a private single-host cluster (scripts/slurm/slurm_local.sh) in a
# folder of its own, then srun and sbatch jobs of the real ditask binary:
#   - srun -n 4 --parallel-workers 1 and srun -n 2 --parallel-workers 2: every node hears every
#     other, node ids 0-3, exit 0;
#   - a task whose worker exits 5: srun returns 5 (the highest task code);
#   - srun -n 3 of the Python greeting (where the build has the Python component);
#   - scancel --signal=TERM on a running step: every worker stops gracefully (its run() ends, its
#     task broadcasts finish) after one "SIGTERM" event (Slurm's copy and the launcher's forward
#     make one), the launchers' summary says so, srun returns 143;
#   - srun --signal=USR1@59: the workers get the local event SIGUSR1;
#   - -m plane=2 and -m arbitrary: refused without a rendezvous (exit 2, naming the distribution),
#     and the job forms with --rendezvous auto and --rendezvous file://;
#   - the sbatch example (scripts/slurm/sbatch_example.sh) solves CartPole at a low threshold.
# Every srun and sbatch runs under `timeout`. Exits 77 (CTest: skipped) when the cluster cannot
# start here (not root, Slurm not installed, someone else's slurmctld running).
#   slurm_test.sh --ditask BIN --modules DIR --root SRC --work DIR
set -uo pipefail

ditask="" modules="" root="" work=""
while (($#)); do
  case "$1" in
    --ditask) ditask="$2"; shift 2 ;;
    --modules) modules="$2"; shift 2 ;;
    --root) root="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    *) echo "slurm_test: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$ditask" && -d "$modules" && -d "$root" && -n "$work" ]] || { echo "slurm_test: bad arguments" >&2; exit 2; }

failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

rm -rf "$work"
mkdir -p "$work"
cluster="$work/cluster"
if ! "$root/scripts/slurm/slurm_local.sh" start "$cluster" >"$work/start.log" 2>&1; then
  # The reason on the SKIPPED line itself (scripts/test.sh lists it), the whole log below it.
  echo "slurm_test: SKIPPED: the private Slurm cluster cannot start here: $(grep -v '^[[:space:]]*$' "$work/start.log" | tail -n 1)"
  sed 's/^/  | /' "$work/start.log"
  "$root/scripts/slurm/slurm_local.sh" stop "$cluster" >/dev/null 2>&1
  exit 77
fi
trap '"$root/scripts/slurm/slurm_local.sh" stop "$cluster" >/dev/null 2>&1' EXIT
# shellcheck disable=SC1091
source "$cluster/env"
hosts="$work/hosts"
echo "127.0.0.1 dtnode1" >"$hosts"
mesh=("$ditask" --platform slurm --hosts-file "$hosts" --startup-timeout 30 --package "$modules/libmesh_tests.so")

# --- every node hears every other --------------------------------------------------------
check_ping() {  # check_ping TASKS WORKERS
  local out="$work/ping-$1x$2.log" rc=0
  timeout 120 srun -n "$1" "${mesh[@]}" --main ping --parallel-workers "$2" >"$out" 2>&1 || rc=$?
  local all="0,1,2,3" n good=1
  ((rc == 0)) || { fail "srun -n $1 --parallel-workers $2 exited $rc"; cat "$out"; return; }
  for n in 0 1 2 3; do
    others=$(tr ',' '\n' <<<"$all" | grep -vx "$n" | paste -sd,)
    grep -qx "\[node $n\] RESULT peers=$others pings_from=$others" "$out" || good=0
  done
  if ((good)); then ok "srun -n $1 --parallel-workers $2: nodes 0-3, each heard the 3 others"; else fail "srun -n $1 x $2"; cat "$out"; fi
}
check_ping 4 1
check_ping 2 2

# --- a failing task fails the step with its code ----------------------------------------
rc=0
timeout 120 srun -n 2 "${mesh[@]}" --main exit_on_node --parallel-workers 1 -- node=1 code=5 >"$work/fail.log" 2>&1 || rc=$?
if ((rc == 5)) && grep -q "ditask: job failed: node 1 (pid [0-9]*, attempt 0) exited with code 5" "$work/fail.log"; then
  ok "a task whose worker exits 5: srun exits 5, its launcher names the node"
else
  fail "failing task: srun exited $rc"; cat "$work/fail.log"
fi

# --- Python workers, where this build has the Python component ----------------------------
if [[ -f "$(dirname "$ditask")/../lib/ditask/python/ditask/__init__.py" ]]; then
  rc=0
  timeout 120 srun -n 3 "$ditask" --platform slurm --hosts-file "$hosts" --startup-timeout 30 \
    --package "$root/python/examples/greeting/greeting.py" --main greeting.main --parallel-workers 1 \
    >"$work/python.log" 2>&1 || rc=$?
  if ((rc == 0)) && [[ $(grep -cx "\[node 0\] Get msg: Hi" "$work/python.log") == 2 ]] &&
     [[ $(grep -c "^\[node [0-2]\] node [0-2] ran [0-9]* steps$" "$work/python.log") == 3 ]]; then
    ok "srun -n 3 of a Python package: node 0 got both greetings"
  else
    fail "srun -n 3 of a Python package exited $rc"; cat "$work/python.log"
  fi
else
  ok "no Python component in this build: the Python srun case is not run"
fi

# --- waiting for lines ------------------------------------------------------------------
wait_lines() {  # wait_lines FILE PATTERN COUNT SECONDS: true once FILE has COUNT lines matching
  local deadline=$((SECONDS + $4))
  while ((SECONDS < deadline)); do
    (($(grep -c -- "$2" "$1" 2>/dev/null || echo 0) >= $3)) && return 0
    sleep 0.1  # polling a log file: there is no notification for another process's output
  done
  return 1
}
job_of() {  # the job id of the running step named $1
  squeue -h -n "$1" -o %i | head -n 1
}

# --- scancel --signal=TERM stops every worker gracefully --------------------------------
out="$work/term.log"
(timeout 120 srun -J dt-term -n 2 "${mesh[@]}" --main graceful --parallel-workers 2 >"$out" 2>&1; echo "srun rc=$?" >>"$out") &
if wait_lines "$out" "READY peers=" 4 60; then
  scancel --signal=TERM "$(job_of dt-term)"
  wait_lines "$out" "srun rc=" 1 60
  # Slurm signals every process of the step and the launchers forward it too: one event each.
  if [[ $(grep -c "RESULT stopped gracefully" "$out") == 4 ]] && grep -q "srun rc=143" "$out" &&
     [[ $(grep -c "SIGNAL SIGTERM" "$out") == 4 ]] &&
     [[ $(grep -c "ditask: ended with exit 0 while the job was stopping: node" "$out") == 2 ]] &&
     [[ $(grep -c "ditask: stopped by SIGTERM; forwarded it to every worker" "$out") == 2 ]]; then
    ok "scancel --signal=TERM: 4 workers stopped gracefully, both launchers said so, srun 143"
  else
    fail "scancel --signal=TERM"; cat "$out"
  fi
else
  fail "graceful job did not start"; cat "$out"
fi
wait

# --- srun --signal=USR1@59 becomes the worker event -------------------------------------
out="$work/usr1.log"
(timeout 150 srun -J dt-usr1 -n 1 -t 1 --signal=USR1@59 "${mesh[@]}" --main graceful --parallel-workers 2 \
   >"$out" 2>&1; echo "srun rc=$?" >>"$out") &
# Slurm checks the time limits now and then (up to a minute): a bound, not a synchronisation.
if wait_lines "$out" "SIGNAL SIGUSR1" 2 120; then
  ok "srun --signal=USR1@59: both workers got the local event SIGUSR1"
else
  fail "--signal=USR1"; cat "$out"
fi
scancel --signal=TERM "$(job_of dt-usr1)" 2>/dev/null
wait

# --- placements no formula can tell: refused, then formed by a rendezvous ---------------
rc=0
timeout 60 srun -n 4 -m plane=2 "${mesh[@]}" --main ping >"$work/plane.log" 2>&1 || rc=$?
if ((rc == 2)) && grep -q "ditask: error: --platform slurm: SLURM_DISTRIBUTION=plane places tasks" "$work/plane.log" &&
   grep -q "ditask: hint: start the job with --rendezvous" "$work/plane.log"; then
  ok "-m plane=2 without a rendezvous: exit 2 naming the distribution, hint --rendezvous"
else
  fail "plane without rendezvous: exit $rc"; cat "$work/plane.log"
fi
printf 'dtnode1\n%.0s' 1 2 3 4 >"$work/hostfile"
for how in "plane|-m plane=2|auto" "arbitrary|-m arbitrary|file://$work/rendezvous"; do
  IFS='|' read -r name dist url <<<"$how"
  rc=0
  # shellcheck disable=SC2086
  SLURM_HOSTFILE="$work/hostfile" timeout 120 srun -n 4 $dist "${mesh[@]}" --rendezvous "$url" --main ping \
    >"$work/rv-$name.log" 2>&1 || rc=$?
  if ((rc == 0)) && [[ $(grep -c "RESULT peers=" "$work/rv-$name.log") == 4 ]] &&
     ! grep "RESULT" "$work/rv-$name.log" | grep -vq "pings_from=\([0-9],\)\{2\}[0-9]$"; then
    ok "-m $name with --rendezvous $url: 4 nodes, each heard 3"
  else
    fail "-m $name with --rendezvous $url: exit $rc"; cat "$work/rv-$name.log"
  fi
done

# --- the sbatch example -----------------------------------------------------------------
rc=0
DITASK="$ditask" DITASK_LAUNCH_HOSTS_FILE="$hosts" timeout 300 sbatch --wait --nodes=1 --ntasks-per-node=1 \
  -o "$work/sbatch.out" "$root/scripts/slurm/sbatch_example.sh" threshold=30 >"$work/sbatch.log" 2>&1 || rc=$?
if ((rc == 0)) && grep -q "\[node 0\] Solved! Running reward is now" "$work/sbatch.out"; then
  ok "sbatch scripts/slurm/sbatch_example.sh: the job solved CartPole (threshold 30) and exited 0"
else
  fail "sbatch example: exit $rc"; cat "$work/sbatch.log" "$work/sbatch.out"
fi

if ((failures)); then
  echo "slurm tests: $failures failed"
  exit 1
fi
echo "slurm tests: all passed"
