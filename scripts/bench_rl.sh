#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/bench.sh rl [--workers "2 4 8"] [--seeds "0 1 2 3 4"] [--dqn-workers 4] [--timeout S]
#                     [--build-dir DIR] [--no-build] [--smoke]
# The RL examples as a user runs them (Release build): for each worker count and seed, the CartPole
# REINFORCE job (plugins/cartpole, synchronous rounds, threshold 475) and prints one JSON line with
# the episodes and the wall time it took to solve; then the DQN job (plugins/dqn) with
# --roles learner:0,evaluator:1,collector:2- for each seed: env steps, train iterations and wall
# time until the evaluator's reward reached 195. A table of the medians follows. A run that fails
# or does not solve within --timeout (default 300 s) is shown with its output and marked failed;
# the script then exits 1 at the end. --smoke lowers the goals (threshold 30, stop value 50): the
# CTest smoke run (label bench) only checks that the script works.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  echo "usage: scripts/bench.sh rl [--workers \"2 4 8\"] [--seeds \"0 1 2 3 4\"] [--dqn-workers 4]" \
    "[--timeout S] [--build-dir DIR] [--no-build] [--smoke]" >&2
  exit 2
}

WORKERS=(2 4 8)
SEEDS=(0 1 2 3 4)
DQN_WORKERS=4
TIMEOUT=300
BUILD_DIR=build/release
BUILD=1
CARTPOLE_GOAL=()
DQN_GOAL=()
while (($#)); do
  case "$1" in
    --workers) read -r -a WORKERS <<<"${2:?}"; shift 2 ;;
    --seeds) read -r -a SEEDS <<<"${2:?}"; shift 2 ;;
    --dqn-workers) DQN_WORKERS="${2:?}"; shift 2 ;;
    --timeout) TIMEOUT="${2:?}"; shift 2 ;;
    --build-dir) BUILD_DIR="${2:?}"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --smoke) CARTPOLE_GOAL=(threshold=30); DQN_GOAL=(stop_value=50); shift ;;
    *) usage ;;
  esac
done
for n in "${WORKERS[@]}" "$DQN_WORKERS" "$TIMEOUT"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
done
for n in "${SEEDS[@]}"; do
  [[ "$n" =~ ^[0-9]+$ ]] || usage
done

timer_start "benchmark finished"
if ((BUILD)); then
  install_packages
  step "release: configure ($BUILD_DIR)" \
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DDITASK_WERROR=OFF
  step "release: build ditask cartpole dqn (-j$JOBS)" \
    cmake --build "$BUILD_DIR" -j "$JOBS" --target ditask cartpole dqn
fi
DITASK="$BUILD_DIR/bin/ditask"
[[ -x "$DITASK" ]] || { echo "bench: $DITASK is missing (build first, or drop --no-build)" >&2; exit 1; }

failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Runs one job: "$@" is the ditask command line; sets SECONDS_TAKEN and leaves its output in $out.
run_job() {
  local start end rc=0
  start=$(_now_us)
  timeout "$TIMEOUT" "$@" >"$out" 2>&1 || rc=$?
  end=$(_now_us)
  SECONDS_TAKEN=$(awk -v us=$((end - start)) 'BEGIN { printf "%.2f", us / 1e6 }')
  return $rc
}
show_failure() {
  echo "bench: failed (exit $1): $2" >&2
  tail -n 20 "$out" >&2
  failed=1
}

declare -A cp_episodes cp_seconds
for n in "${WORKERS[@]}"; do
  for seed in "${SEEDS[@]}"; do
    cmd=("$DITASK" --package cartpole --main main --parallel-workers "$n" --roles "learner:0,collector:1-"
         -- "seed=$seed" "${CARTPOLE_GOAL[@]}")
    if run_job "${cmd[@]}"; then
      episodes=$(grep -Eo 'learner: solved after [0-9]+ episodes' "$out" | grep -Eo '[0-9]+' | head -n 1)
      echo "{\"job\": \"cartpole\", \"workers\": $n, \"seed\": $seed, \"solved\": true, \"episodes\": ${episodes:-null}, \"seconds\": $SECONDS_TAKEN}"
      cp_episodes[$n]+="${episodes:-0} "
      cp_seconds[$n]+="$SECONDS_TAKEN "
    else
      rc=$?
      echo "{\"job\": \"cartpole\", \"workers\": $n, \"seed\": $seed, \"solved\": false, \"exit_code\": $rc, \"seconds\": $SECONDS_TAKEN}"
      show_failure "$rc" "${cmd[*]}"
    fi
  done
done

declare -a dqn_steps dqn_iters dqn_secs
for seed in "${SEEDS[@]}"; do
  cmd=("$DITASK" --package dqn --parallel-workers "$DQN_WORKERS" --roles "learner:0,evaluator:1,collector:2-"
       -- "seed=$seed" "${DQN_GOAL[@]}")
  if run_job "${cmd[@]}"; then
    line=$(grep -E 'reached the stop value' "$out" | head -n 1)
    iter=$(sed -E 's/.* at train_iter ([0-9]+) .*/\1/' <<<"$line")
    steps=$(sed -E 's/.* after ([0-9]+) env steps.*/\1/' <<<"$line")
    reward=$(sed -E 's/.*eval reward ([0-9.]+) reached.*/\1/' <<<"$line")
    echo "{\"job\": \"dqn\", \"workers\": $DQN_WORKERS, \"seed\": $seed, \"solved\": true, \"eval_reward\": $reward, \"train_iter\": $iter, \"env_steps\": $steps, \"seconds\": $SECONDS_TAKEN}"
    dqn_steps+=("$steps")
    dqn_iters+=("$iter")
    dqn_secs+=("$SECONDS_TAKEN")
  else
    rc=$?
    echo "{\"job\": \"dqn\", \"workers\": $DQN_WORKERS, \"seed\": $seed, \"solved\": false, \"exit_code\": $rc, \"seconds\": $SECONDS_TAKEN}"
    show_failure "$rc" "${cmd[*]}"
  fi
done

median() { tr ' ' '\n' <<<"$*" | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
echo
echo "CartPole REINFORCE (synchronous rounds, threshold 475), seeds ${SEEDS[*]}, medians:"
printf '%8s %10s %10s   %s\n' workers episodes seconds "episodes per seed"
for n in "${WORKERS[@]}"; do
  printf '%8s %10s %10s   %s\n' "$n" "$(median "${cp_episodes[$n]:-}")" "$(median "${cp_seconds[$n]:-}")" "${cp_episodes[$n]:-}"
done
echo "DQN ($DQN_WORKERS workers: learner, evaluator, $((DQN_WORKERS - 2)) collectors; stop value 195), medians:"
echo "  env steps $(median "${dqn_steps[*]:-}"), train iterations $(median "${dqn_iters[*]:-}"), seconds $(median "${dqn_secs[*]:-}")"
_timer_report
trap - EXIT
rm -f "$out"
exit $failed
