#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmarks (never run as timed tests; CI only smoke-runs them). The modes:
#
#   scripts/bench.sh launch [--runs R] [--workers "2 8 32 64"] [--build-dir DIR] [--no-build]
#   scripts/bench.sh mesh [--runs R] [--rounds N] [--count K] [--big-count K] [--fanout-count K]
#                         [--workers "8 32"] [--protocols "tcp ipc"] [--timeout S]
#                         [--build-dir DIR] [--no-build]
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
#
# mesh (scripts/bench_mesh.sh): builds Release (ditask, the bench_mesh module,
# ditask_raw_mesh_bench, ditask_zmq_mesh_bench) and measures the mesh against raw Asio doing the
# same between processes of its own (tests/bench/raw_mesh_bench.cpp) and against ZeroMQ DEALER
# sockets at their defaults (tests/bench/zmq_mesh_bench.cpp, Debian's libzmq3-dev), each figure R
# times (default 3), raw, ditask and ZeroMQ interleaved, medians reported:
#   rtt      64-byte ping-pong between 2 workers, p50 and p99 of N (20000) round trips after N/10
#            of warm-up, per protocol (tcp, ipc); plus context switches per round trip of both
#            processes (getrusage over the measured window; with a working `perf stat -e
#            context-switches`, also perf's count for the whole command / all round trips).
#            Targets: p50 ratio <= 2 to raw and < 1 to ZeroMQ; at most 4 context switches per
#            round trip. Also with both handlers registered with on_inline (they run on the io
#            threads): target p50 ratio <= 1.5 to raw (issue 41).
#   stream   K (1000000) one-way 64-byte events, events/s (baseline: one write() per frame).
#            Targets: ratio >= 8 to raw, >= 1 to ZeroMQ.
#   big      K (2000) one-way 1 MiB events, GB/s. Target: ratio >= 0.8.
#   fanout   K (200000) 64-byte events from node 0 to 7 peers (8 workers), events/s reaching
#            all 7, and delivered/sent. Target: 100% delivered.
#   ready    N (8, 32) workers whose entry returns right after start() (mesh ready): the time
#            from the start of the command until the last worker printed that its mesh was
#            ready (the issue's figure), against the whole command of fork+exec of N raw peers
#            that connect a full TCP mesh and exit. Target: ratio <= 2 at N=32. Also reported,
#            without a target, as "ready+exit": ditask's whole command (its workers then stop:
#            finish barrier, acknowledgements, bye) against the same raw command.
#   loaded   the tcp rtt and the 64-byte stream again with two `yes > /dev/null` running (both
#            cores busy), no targets: reported beside raw and ZeroMQ under the same load.
#   rss      VmRSS (kB) of an idle worker after start() with 2 peers (largest of the 3), against
#            the raw mesh peer's.
# Every figure prints one JSON line (ditask, baseline from the same run, ratio, target, met),
# then a table sums up. A run that fails or hangs (--timeout, default 300 s) is reported with its
# command and output and the figure is marked failed; the script then exits 1 at the end.
# Exits 0 when every run succeeded, whether or not the targets were met.
#
# rpc (scripts/bench_rpc.sh): remote calls between 2 workers (64-byte call p50/p99 and calls/s with
# 1, 8 and 64 in flight, a 1 MiB argument's round trip) beside the mesh's event round trip, its
# one-way 64-byte event rate, the raw Asio ping-pong and raw pipelined calls (plain blocking
# sockets, same discipline: ditask_raw_calls_bench) from the same run. Options as mesh
# (--runs, --rounds, --count, --timeout). Targets: call p50 <= 1.2x the event round trip; calls/s
# with 64 in flight >= 0.3x the one-way event rate.
#
# redis (scripts/bench_redis.sh): ditask over --mq-type redis beside plain hiredis through one
# redis-server the script starts: the 64-byte round trip (p50, p99) and one-way 64-byte events/s
# (baselines: one blocking PUBLISH per message, as DI-engine does, and pipelined PUBLISHes).
# Options as rpc (--runs, --rounds, --count, --timeout). Targets: rtt p50 <= 1.5x hiredis;
# one-way rate >= 0.6x the pipelined baseline.
#
# autograd (scripts/bench_autograd.sh): the PyTorch RPC tutorial's distributed RNN iteration
# (forward, distributed backward, optimizer step) between a trainer and a parameter server, beside
# the same model in one process (LibTorch), the empty call's round trip and, when Debian's
# python3-torch is installed, PyTorch's own run of the tutorial, all in the same run. Options:
# --runs, --rounds (default 2000), --timeout. Needs the torch component (libtorch-dev). Targets:
# p50 <= 1 ms; p50 <= 1.5x (local p50 + calls x rtt).
#
# scale (scripts/bench_scale.sh): N workers on one machine (--workers, default "32 128 512"), for
# each topology of --topologies (default "star-relay mesh") and --topology alone (the floor): the
# time until every worker's start() returned, a broadcast's time to reach all N-1 others, and a
# worker's RSS and open descriptors (median and largest). Options: --runs (default 1), --timeout.
# Target: ready <= 5 s at N = 512.
#
# python (scripts/bench_python.sh): two Python workers beside two C++ workers on the same runtime:
# the 64-byte event round trip, the one-way 64-byte event rate, and the start of 32 workers.
# Options: --runs, --rounds, --count (C++; Python sends a tenth), --timeout. No targets.
#
# trace (scripts/bench_trace.sh): what `ditask --trace` costs: the 64-byte event rate and round
# trip and calls/s at 64 and 1 in flight, each without and with --trace, interleaved, --runs
# (default 7), on both cores and on one (taskset -c 0), medians and the ratio on/off, and the
# workers' CPU time for the same work. Target: each at most 10% worse with --trace.
#
# rl: the RL examples' episodes and wall time to solve (scripts/bench_rl.sh; its own options).
#
# --no-build skips installing packages, configuring and building (the CTest smoke runs use it).
if [[ "${1:-}" == rl ]]; then
  shift
  exec "$(dirname "${BASH_SOURCE[0]}")/bench_rl.sh" "$@"
fi
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  echo "usage: scripts/bench.sh launch [--runs R] [--workers \"2 8 32 64\"] [--build-dir DIR] [--no-build]" >&2
  echo "       scripts/bench.sh rl [--workers \"2 4 8\"] [--seeds \"0 1 2 3 4\"] [--dqn-workers 4] [--timeout S]" \
    "[--build-dir DIR] [--no-build]" >&2
  echo "       scripts/bench.sh mesh [--runs R] [--rounds N] [--count K] [--big-count K]" \
    "[--fanout-count K] [--workers \"8 32\"] [--protocols \"tcp ipc\"] [--timeout S]" \
    "[--build-dir DIR] [--no-build]" >&2
  echo "       scripts/bench.sh rpc [--runs R] [--rounds N] [--count K] [--timeout S] [--build-dir DIR] [--no-build]" >&2
  echo "       scripts/bench.sh autograd [--runs R] [--rounds N] [--timeout S] [--build-dir DIR] [--no-build]" >&2
  echo "       scripts/bench.sh redis [--runs R] [--rounds N] [--count K] [--timeout S] [--build-dir DIR] [--no-build]" >&2
  echo "       scripts/bench.sh python [--runs R] [--rounds N] [--count K] [--timeout S] [--build-dir DIR] [--no-build]" >&2
  echo "       scripts/bench.sh trace [--runs R] [--rounds N] [--timeout S] [--build-dir DIR] [--no-build]" >&2
  echo "       scripts/bench.sh scale [--runs R] [--workers \"32 128 512\"] [--topologies \"star-relay mesh\"]" \
    "[--timeout S] [--build-dir DIR] [--no-build]" >&2
  exit 2
}

MODE="${1:-}"
[[ "$MODE" == launch || "$MODE" == mesh || "$MODE" == rpc || "$MODE" == redis || "$MODE" == autograd ||
  "$MODE" == scale || "$MODE" == trace || "$MODE" == python ]] || usage
shift
BUILD_DIR=build/release
BUILD=1
TOPOLOGIES=(star-relay mesh)
if [[ $MODE == launch ]]; then
  RUNS=7
  WORKERS=(2 8 32 64)
elif [[ $MODE == scale ]]; then
  RUNS=1
  WORKERS=(32 128 512)
elif [[ $MODE == trace ]]; then
  RUNS=7
  WORKERS=(8 32)
else
  RUNS=3
  WORKERS=(8 32)
fi
ROUNDS=20000
[[ $MODE == autograd ]] && ROUNDS=2000
COUNT=1000000
BIG_COUNT=2000
FANOUT_COUNT=200000
PROTOCOLS=(tcp ipc)
TIMEOUT=300
while (($#)); do
  case "$MODE:$1" in
    *:--runs) RUNS="${2:?}"; shift 2 ;;
    *:--workers) read -r -a WORKERS <<<"${2:?}"; shift 2 ;;
    *:--build-dir) BUILD_DIR="${2:?}"; shift 2 ;;
    *:--no-build) BUILD=0; shift ;;
    mesh:--rounds | rpc:--rounds | redis:--rounds | autograd:--rounds | python:--rounds) ROUNDS="${2:?}"; shift 2 ;;
    mesh:--count | rpc:--count | redis:--count | python:--count) COUNT="${2:?}"; shift 2 ;;
    mesh:--big-count) BIG_COUNT="${2:?}"; shift 2 ;;
    mesh:--fanout-count) FANOUT_COUNT="${2:?}"; shift 2 ;;
    mesh:--protocols) read -r -a PROTOCOLS <<<"${2:?}"; shift 2 ;;
    scale:--topologies) read -r -a TOPOLOGIES <<<"${2:?}"; shift 2 ;;
    mesh:--timeout | rpc:--timeout | redis:--timeout | autograd:--timeout | scale:--timeout | trace:--timeout | python:--timeout) TIMEOUT="${2:?}"; shift 2 ;;
    trace:--rounds) ROUNDS="${2:?}"; shift 2 ;;
    *) usage ;;
  esac
done
for n in "$RUNS" "$ROUNDS" "$COUNT" "$BIG_COUNT" "$FANOUT_COUNT" "$TIMEOUT" "${WORKERS[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
done
for p in "${PROTOCOLS[@]}"; do
  [[ "$p" == tcp || "$p" == ipc ]] || usage
done
for p in "${TOPOLOGIES[@]}"; do
  [[ "$p" == star-relay || "$p" == mesh ]] || usage
done

timer_start "benchmark finished"
TORCH_FLAGS=()
[[ $MODE == autograd ]] && TORCH_FLAGS=(-DDITASK_TORCH=ON)
if ((BUILD)); then
  if [[ $MODE == launch ]]; then
    install_packages
    TARGETS=(ditask faults ditask_spawn_floor)
  elif [[ $MODE == rpc ]]; then
    install_packages "${DITASK_BENCH_PACKAGES[@]}"
    TARGETS=(ditask bench_mesh bench_rpc ditask_raw_mesh_bench ditask_raw_calls_bench ditask_grpc_calls_bench)
  elif [[ $MODE == redis ]]; then
    install_packages "${DITASK_BENCH_PACKAGES[@]}"
    TARGETS=(ditask bench_mesh ditask_redis_baseline_bench)
  elif [[ $MODE == scale ]]; then
    install_packages
    TARGETS=(ditask bench_mesh)
  elif [[ $MODE == trace ]]; then
    install_packages
    TARGETS=(ditask bench_mesh bench_rpc)
  elif [[ $MODE == python ]]; then
    install_packages "${DITASK_PYTHON_PACKAGES[@]}"
    TARGETS=(ditask bench_mesh faults _ditask)
  elif [[ $MODE == autograd ]]; then
    install_packages "${DITASK_TORCH_PACKAGES[@]}"
    TARGETS=(ditask bench_autograd)
  else
    install_packages "${DITASK_BENCH_PACKAGES[@]}"
    TARGETS=(ditask bench_mesh ditask_raw_mesh_bench ditask_zmq_mesh_bench)
  fi
  # BUILD_TESTING=ON: the bench programs live in tests/bench/. Same cache as scripts/demo.sh.
  step "release: configure ($BUILD_DIR)" \
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DDITASK_WERROR=OFF "${TORCH_FLAGS[@]}"
  step "release: build ${TARGETS[*]} (-j$JOBS)" \
    cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]}"
fi

DITASK="$BUILD_DIR/bin/ditask"

# Fails unless every named file exists.
require_files() {
  local f
  for f in "$@"; do
    if [[ ! -e "$f" ]]; then
      echo "error: $f is missing (build the Release targets first, or drop --no-build)" >&2
      exit 1
    fi
  done
}

# The median of its integer arguments.
_median() {
  local sorted
  mapfile -t sorted < <(printf '%s\n' "$@" | sort -n)
  echo "${sorted[$((${#sorted[@]} / 2))]}"
}

RUNS_TEXT="$RUNS runs"
((RUNS > 1)) || RUNS_TEXT="1 run"

# ======================================== launch ========================================

MODULE="$BUILD_DIR/lib/ditask/plugins/libfaults.so"
FLOOR="$BUILD_DIR/bin/ditask_spawn_floor"

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

ms() { printf '%d.%d' $((($1 + 50) / 1000)) $(((($1 + 50) / 100) % 10)); }
ratio() { local r=$((($2 * 100 + $1 / 2) / $1)); printf '%d.%02d' $((r / 100)) $((r % 100)); }

launch_main() {
  local TARGET_N=32 TARGET_RATIO=3 TOOL=bash n f d verdict
  require_files "$DITASK" "$MODULE" "$FLOOR"
  if [[ "${BENCH_TOOL:-}" != bash ]] && command -v hyperfine >/dev/null; then
    TOOL=hyperfine
  fi
  for n in "${WORKERS[@]}"; do
    step "launch N=$n: floor and ditask, $RUNS_TEXT each ($TOOL)" "measure_$TOOL" "$n"
  done

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
}

if [[ $MODE == launch ]]; then
  launch_main
else
  # shellcheck source=scripts/bench_mesh.sh
  source "$(dirname "${BASH_SOURCE[0]}")/bench_mesh.sh"
  if [[ $MODE == rpc ]]; then
    # shellcheck source=scripts/bench_rpc.sh
    source "$(dirname "${BASH_SOURCE[0]}")/bench_rpc.sh"
    rpc_main
  elif [[ $MODE == autograd ]]; then
    # shellcheck source=scripts/bench_autograd.sh
    source "$(dirname "${BASH_SOURCE[0]}")/bench_autograd.sh"
    autograd_main
  elif [[ $MODE == redis ]]; then
    # shellcheck source=scripts/bench_redis.sh
    source "$(dirname "${BASH_SOURCE[0]}")/bench_redis.sh"
    redis_main
  elif [[ $MODE == scale ]]; then
    # shellcheck source=scripts/bench_scale.sh
    source "$(dirname "${BASH_SOURCE[0]}")/bench_scale.sh"
    scale_main
  elif [[ $MODE == python ]]; then
    # shellcheck source=scripts/bench_python.sh
    source "$(dirname "${BASH_SOURCE[0]}")/bench_python.sh"
    python_main
  elif [[ $MODE == trace ]]; then
    # shellcheck source=scripts/bench_trace.sh
    source "$(dirname "${BASH_SOURCE[0]}")/bench_trace.sh"
    trace_main
  else
    mesh_main
  fi
fi
