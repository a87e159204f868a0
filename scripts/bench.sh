#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmarks (never run as timed tests; CI only smoke-runs them). One so far:
#
#   scripts/bench.sh launch [--runs R] [--workers "2 8 32 64"] [--build-dir DIR] [--no-build]
#
# launch: builds Release (build/release: ditask, the faults module, ditask_spawn_floor) and times,
# for each N, the whole command
#   ditask --package <build>/lib/ditask/plugins/libfaults.so --main noop --parallel-workers N
# (N workers whose entry returns at once) against the floor, ditask_spawn_floor N: a plain
# fork+exec of N /bin/true, all started before any is waited for. Each is run once to warm up,
# then R times (default 7), the two alternating; the table shows the medians and the ratio.
# Uses hyperfine (-N, no shell) when it is installed and BENCH_TOOL is not "bash"; otherwise a
# bash loop timing each run with EPOCHREALTIME (both include the same fork+exec of the measured
# command). Exits 0 when every run succeeded, whether or not the target was met.
# --no-build skips installing packages, configuring and building (the CTest smoke run uses it).
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  echo "usage: scripts/bench.sh launch [--runs R] [--workers \"2 8 32 64\"] [--build-dir DIR] [--no-build]" >&2
  exit 2
}

[[ "${1:-}" == launch ]] || usage
shift
RUNS=7
WORKERS=(2 8 32 64)
BUILD_DIR=build/release
BUILD=1
while (($#)); do
  case "$1" in
    --runs) RUNS="${2:?}"; shift 2 ;;
    --workers) read -r -a WORKERS <<<"${2:?}"; shift 2 ;;
    --build-dir) BUILD_DIR="${2:?}"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    *) usage ;;
  esac
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || usage
TARGET_N=32
TARGET_RATIO=3

timer_start "benchmark finished"
if ((BUILD)); then
  install_packages
  # BUILD_TESTING=ON: the bench programs live in tests/bench/. Same cache as scripts/demo.sh.
  step "release: configure ($BUILD_DIR)" \
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DDITASK_WERROR=OFF
  step "release: build ditask, faults, ditask_spawn_floor (-j$JOBS)" \
    cmake --build "$BUILD_DIR" -j "$JOBS" --target ditask faults ditask_spawn_floor
fi

DITASK="$BUILD_DIR/bin/ditask"
MODULE="$BUILD_DIR/lib/ditask/plugins/libfaults.so"
FLOOR="$BUILD_DIR/bin/ditask_spawn_floor"
for f in "$DITASK" "$MODULE" "$FLOOR"; do
  if [[ ! -e "$f" ]]; then
    echo "error: $f is missing (build the Release targets first, or drop --no-build)" >&2
    exit 1
  fi
done

# The two measured commands for N workers, as arrays.
set_commands() {
  FLOOR_CMD=("$FLOOR" "$1")
  DITASK_CMD=("$DITASK" --package "$MODULE" --main noop --parallel-workers "$1")
}

# Sets _took_us to the wall time of one run of "$@", output discarded. Fails when it fails.
_time_once() {
  local start=${EPOCHREALTIME/[.,]/}
  "$@" >/dev/null 2>&1 </dev/null || {
    echo "error: '$*' failed (exit $?)" >&2
    return 1
  }
  _took_us=$((${EPOCHREALTIME/[.,]/} - start))
}

# The median of its integer arguments.
_median() {
  local sorted
  mapfile -t sorted < <(printf '%s\n' "$@" | sort -n)
  echo "${sorted[$((${#sorted[@]} / 2))]}"
}

declare -A FLOOR_US DITASK_US

# Fills FLOOR_US[N] and DITASK_US[N] with medians in microseconds (bash loop).
measure_bash() {
  local n=$1 i floor=() ditask=()
  set_commands "$n"
  # A step runs this as `cmd || rc=$?`, where bash ignores set -e: hence every `|| return`.
  { _time_once "${FLOOR_CMD[@]}" && _time_once "${DITASK_CMD[@]}"; } || return  # warm-up
  for ((i = 0; i < RUNS; i++)); do
    _time_once "${FLOOR_CMD[@]}" || return
    floor+=("$_took_us")
    _time_once "${DITASK_CMD[@]}" || return
    ditask+=("$_took_us")
  done
  echo "floor runs (us): ${floor[*]}"
  echo "ditask runs (us): ${ditask[*]}"
  FLOOR_US[$n]=$(_median "${floor[@]}")
  DITASK_US[$n]=$(_median "${ditask[@]}")
}

# The same with hyperfine: its medians, in seconds in the JSON export, as microseconds.
measure_hyperfine() {
  local n=$1 json medians
  json="$DITASK_LOG_DIR/hyperfine-$n.json"
  set_commands "$n"
  # -N: no shell; hyperfine splits each command string into words as a shell would.
  hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$json" \
    "$(printf '%q ' "${FLOOR_CMD[@]}")" "$(printf '%q ' "${DITASK_CMD[@]}")" || return
  mapfile -t medians < <(grep -Eo '"median": *[0-9.eE+-]+' "$json" | sed 's/.*: *//' |
    awk '{ printf "%d\n", $1 * 1000000 + 0.5 }')
  ((${#medians[@]} == 2)) || { echo "error: no medians in $json" >&2; return 1; }
  FLOOR_US[$n]=${medians[0]}
  DITASK_US[$n]=${medians[1]}
}

RUNS_TEXT="$RUNS runs"
((RUNS > 1)) || RUNS_TEXT="1 run"
TOOL=bash
if [[ "${BENCH_TOOL:-}" != bash ]] && command -v hyperfine >/dev/null; then
  TOOL=hyperfine
fi
for n in "${WORKERS[@]}"; do
  step "launch N=$n: floor and ditask, $RUNS_TEXT each ($TOOL)" "measure_$TOOL" "$n"
done

ms() { printf '%d.%d' $((($1 + 50) / 1000)) $(((($1 + 50) / 100) % 10)); }
ratio() { local r=$((($2 * 100 + $1 / 2) / $1)); printf '%d.%02d' $((r / 100)) $((r % 100)); }

echo
echo "ditask launch vs fork+exec of /bin/true, median of $RUNS_TEXT ($TOOL, $(nproc) cores):"
printf '%6s  %10s  %10s  %6s\n' N "floor ms" "ditask ms" ratio
verdict="not measured"
for n in "${WORKERS[@]}"; do
  f=${FLOOR_US[$n]} d=${DITASK_US[$n]}
  ((f > 0)) || f=1
  printf '%6s  %10s  %10s  %6s\n' "$n" "$(ms "$f")" "$(ms "$d")" "$(ratio "$f" "$d")"
  if ((n == TARGET_N)); then
    if ((d <= TARGET_RATIO * f)); then verdict=met; else verdict=missed; fi
  fi
done
echo "target: ratio <= $TARGET_RATIO.0 at N=$TARGET_N: $verdict"
