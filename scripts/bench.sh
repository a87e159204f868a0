#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmarks (never run as timed tests; CI only smoke-runs them). Three modes:
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
# mesh: builds Release (ditask, the bench_mesh module, ditask_raw_mesh_bench) and measures the
# mesh against raw Asio doing the same between processes of its own
# (tests/bench/raw_mesh_bench.cpp), each figure R times (default 3), baseline and ditask
# alternating, medians reported:
#   rtt      64-byte ping-pong between 2 workers, p50 and p99 of N (20000) round trips after N/10
#            of warm-up, per protocol (tcp, ipc); plus context switches per round trip of both
#            processes (getrusage over the measured window; with a working `perf stat -e
#            context-switches`, also perf's count for the whole command / all round trips).
#            Target: ratio <= 2.5.
#   stream   K (1000000) one-way 64-byte events, events/s (baseline: one write() per frame).
#            Target: ratio >= 8.
#   big      K (2000) one-way 1 MiB events, GB/s. Target: ratio >= 0.7.
#   fanout   K (200000) 64-byte events from node 0 to 7 peers (8 workers), events/s reaching
#            all 7, and delivered/sent. Target: 100% delivered.
#   ready    N (8, 32) workers whose entry returns right after start() (mesh ready): the time
#            from the start of the command until the last worker printed that its mesh was
#            ready (the issue's figure), against the whole command of fork+exec of N raw peers
#            that connect a full TCP mesh and exit. Target: ratio <= 2 at N=32. Also reported,
#            without a target, as "ready+exit": ditask's whole command (its workers then stop:
#            finish barrier, acknowledgements, bye) against the same raw command.
#   rss      VmRSS (kB) of an idle worker after start() with 2 peers (largest of the 3), against
#            the raw mesh peer's.
# Every figure prints one JSON line (ditask, baseline from the same run, ratio, target, met),
# then a table sums up. A run that fails or hangs (--timeout, default 300 s) is reported with its
# command and output and the figure is marked failed; the script then exits 1 at the end.
# Exits 0 when every run succeeded, whether or not the targets were met.
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
  exit 2
}

MODE="${1:-}"
[[ "$MODE" == launch || "$MODE" == mesh ]] || usage
shift
BUILD_DIR=build/release
BUILD=1
if [[ $MODE == launch ]]; then
  RUNS=7
  WORKERS=(2 8 32 64)
else
  RUNS=3
  WORKERS=(8 32)
fi
ROUNDS=20000
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
    mesh:--rounds) ROUNDS="${2:?}"; shift 2 ;;
    mesh:--count) COUNT="${2:?}"; shift 2 ;;
    mesh:--big-count) BIG_COUNT="${2:?}"; shift 2 ;;
    mesh:--fanout-count) FANOUT_COUNT="${2:?}"; shift 2 ;;
    mesh:--protocols) read -r -a PROTOCOLS <<<"${2:?}"; shift 2 ;;
    mesh:--timeout) TIMEOUT="${2:?}"; shift 2 ;;
    *) usage ;;
  esac
done
for n in "$RUNS" "$ROUNDS" "$COUNT" "$BIG_COUNT" "$FANOUT_COUNT" "$TIMEOUT" "${WORKERS[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
done
for p in "${PROTOCOLS[@]}"; do
  [[ "$p" == tcp || "$p" == ipc ]] || usage
done

timer_start "benchmark finished"
if ((BUILD)); then
  install_packages
  if [[ $MODE == launch ]]; then
    TARGETS=(ditask faults ditask_spawn_floor)
  else
    TARGETS=(ditask bench_mesh ditask_raw_mesh_bench)
  fi
  # BUILD_TESTING=ON: the bench programs live in tests/bench/. Same cache as scripts/demo.sh.
  step "release: configure ($BUILD_DIR)" \
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DDITASK_WERROR=OFF
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

# ========================================= mesh =========================================

MESH_MODULE="$BUILD_DIR/lib/ditask/plugins/libbench_mesh.so"
RAW="$BUILD_DIR/bin/ditask_raw_mesh_bench"
WARMUP=$((ROUNDS / 10))
PERF=0

# run_to FILE cmd...: runs cmd with its output in FILE; on failure prints the command, its exit
# code and output, and fails. A hang ends after TIMEOUT + 30 s (ditask's own --timeout fires
# first; the raw programs have none).
run_to() {
  local out=$1 rc=0
  shift
  timeout --kill-after=10 $((TIMEOUT + 30)) "$@" >"$out" 2>&1 </dev/null || rc=$?
  if ((rc != 0)); then
    echo "error: command failed (exit $rc): $(printf '%q ' "$@")"
    echo "---- its output ----"
    tail -n 60 "$out"
    echo "---- end of output ----"
    return 1
  fi
}

# Prints the value of KEY in the first line of FILE that contains TAG ("bench_mesh rtt "); fails
# (naming what is missing) when there is none.
field() {
  local file=$1 tag=$2 key=$3 value
  value=$(grep -m 1 -F "$tag" "$file" | grep -Eo "(^| )$key=[^ ]*" | head -n 1 | sed 's/.*=//')
  if [[ -z "$value" ]]; then
    echo "error: no '$key=' in a '$tag' line of $file:"
    tail -n 20 "$file"
    return 1
  fi
  echo "$value"
}

# The median of decimal numbers (upper middle for an even count, as _median).
fmedian() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int(NR / 2) + 1] }'
}
fmin() { printf '%s\n' "$@" | sort -g | head -n 1; }
fmax() { printf '%s\n' "$@" | sort -g | tail -n 1; }

# ditask command line for the bench_mesh entry $1 with $2 workers; the rest are options of
# ditask, then `--` and the module parameters come from MODULE_PARAMS.
ditask_cmd() {
  local entry=$1 workers=$2
  shift 2
  # The module's own waits give up a little earlier, so a hang names what it waited for.
  DCMD=("$DITASK" --package "$MESH_MODULE" --main "$entry" --parallel-workers "$workers"
        --timeout "$TIMEOUT" "$@" -- "${MODULE_PARAMS[@]}"
        "timeout_s=$((TIMEOUT > 20 ? TIMEOUT - 10 : TIMEOUT))")
}

# perf's context-switch count of the last run, from FILE (written by `perf stat -x, -o FILE`).
perf_count() {
  awk -F, '$3 ~ /context-switches/ { print $1; exit }' "$1"
}

# Figures, in table order. Per key: title, transport, unit, ditask and baseline medians, target
# ("<= 2.5", ">= 8", "delivered" or "-"), extra JSON members, and whether the figure failed.
FIGURES=()
declare -A F_TITLE F_TRANSPORT F_UNIT F_DITASK F_BASE F_TARGET F_EXTRA F_FAILED F_NOTE

# add_figure KEY TITLE TRANSPORT UNIT TARGET
add_figure() {
  FIGURES+=("$1")
  F_TITLE[$1]=$2 F_TRANSPORT[$1]=$3 F_UNIT[$1]=$4 F_TARGET[$1]=$5
  F_DITASK[$1]="" F_BASE[$1]="" F_EXTRA[$1]="" F_FAILED[$1]=1 F_NOTE[$1]=""
}

# rtt over protocol $1: R runs of the raw ping-pong and of the bench_mesh rtt entry.
measure_rtt() {
  local proto=$1 i out perf_file d50=() d99=() dcs=() b50=() b99=() bcs=() dperf=() bperf=()
  local wrap=()
  MODULE_PARAMS=("rounds=$ROUNDS" "warmup=$WARMUP")
  ditask_cmd rtt 2 --protocol "$proto"
  for ((i = 0; i < RUNS; i++)); do
    out="$DITASK_LOG_DIR/rtt-$proto-raw-$i.out"
    perf_file="$out.perf"
    ((PERF)) && wrap=(perf stat -x "," -e context-switches -o "$perf_file" --)
    run_to "$out" "${wrap[@]}" "$RAW" rtt --transport "$proto" --rounds "$ROUNDS" \
      --warmup "$WARMUP" || return
    b50+=("$(field "$out" "raw_mesh_bench rtt " p50_us)") || return
    b99+=("$(field "$out" "raw_mesh_bench rtt " p99_us)") || return
    bcs+=("$(field "$out" "raw_mesh_bench rtt " ctxsw_per_rt)") || return
    ((PERF)) && bperf+=("$(perf_count "$perf_file")")
    cat "$out"
    out="$DITASK_LOG_DIR/rtt-$proto-ditask-$i.out"
    perf_file="$out.perf"
    ((PERF)) && wrap=(perf stat -x "," -e context-switches -o "$perf_file" --)
    run_to "$out" "${wrap[@]}" "${DCMD[@]}" || return
    d50+=("$(field "$out" "bench_mesh rtt " p50_us)") || return
    d99+=("$(field "$out" "bench_mesh rtt " p99_us)") || return
    dcs+=("$(field "$out" "bench_mesh rtt " ctxsw_per_rt)") || return
    ((PERF)) && dperf+=("$(perf_count "$perf_file")")
    cat "$out"
  done
  local extra
  extra=$(printf '"ctxsw_per_rt":{"ditask":%s,"baseline":%s}' "$(fmedian "${dcs[@]}")" \
    "$(fmedian "${bcs[@]}")")
  F_NOTE[rtt_p50_$proto]="context switches per round trip (both processes, measured window):"
  F_NOTE[rtt_p50_$proto]+=" ditask $(fmedian "${dcs[@]}"), baseline $(fmedian "${bcs[@]}")"
  if ((PERF)) && [[ -n "${dperf[*]}" && -n "${bperf[*]}" ]]; then
    local total=$((ROUNDS + WARMUP)) dp bp
    dp=$(awk -v c="$(fmedian "${dperf[@]}")" -v n=$total 'BEGIN { printf "%.2f", c / n }')
    bp=$(awk -v c="$(fmedian "${bperf[@]}")" -v n=$total 'BEGIN { printf "%.2f", c / n }')
    extra+=$(printf ',"perf_ctxsw_per_rt_whole_command":{"ditask":%s,"baseline":%s}' "$dp" "$bp")
    F_NOTE[rtt_p50_$proto]+="; perf, whole command incl. start-up: ditask $dp, baseline $bp"
  fi
  F_DITASK[rtt_p50_$proto]=$(fmedian "${d50[@]}") F_BASE[rtt_p50_$proto]=$(fmedian "${b50[@]}")
  F_DITASK[rtt_p99_$proto]=$(fmedian "${d99[@]}") F_BASE[rtt_p99_$proto]=$(fmedian "${b99[@]}")
  F_EXTRA[rtt_p50_$proto]=$extra F_EXTRA[rtt_p99_$proto]=$extra
  F_FAILED[rtt_p50_$proto]=0 F_FAILED[rtt_p99_$proto]=0
}

# One-way stream: measure_stream KEY FIELD WORKERS COUNT SIZE (FIELD: events_per_s or gb_per_s).
measure_stream() {
  local key=$1 what=$2 workers=$3 count=$4 size=$5 i out d=() b=() dpct=() bpct=()
  MODULE_PARAMS=("count=$count" "size=$size")
  ditask_cmd stream "$workers"
  for ((i = 0; i < RUNS; i++)); do
    out="$DITASK_LOG_DIR/$key-raw-$i.out"
    run_to "$out" "$RAW" stream --transport tcp --count "$count" --size "$size" \
      --readers $((workers - 1)) || return
    b+=("$(field "$out" "raw_mesh_bench stream " "$what")") || return
    bpct+=("$(field "$out" "raw_mesh_bench stream " delivered_pct)") || return
    cat "$out"
    out="$DITASK_LOG_DIR/$key-ditask-$i.out"
    run_to "$out" "${DCMD[@]}" || return
    d+=("$(field "$out" "bench_mesh stream " "$what")") || return
    dpct+=("$(field "$out" "bench_mesh stream " delivered_pct)") || return
    cat "$out"
  done
  F_DITASK[$key]=$(fmedian "${d[@]}") F_BASE[$key]=$(fmedian "${b[@]}")
  F_EXTRA[$key]=$(printf '"delivered_pct_min":{"ditask":%s,"baseline":%s}' "$(fmin "${dpct[@]}")" \
    "$(fmin "${bpct[@]}")")
  F_NOTE[$key]="delivered/sent, lowest of the runs: ditask $(fmin "${dpct[@]}")%,"
  F_NOTE[$key]+=" baseline $(fmin "${bpct[@]}")%"
  F_FAILED[$key]=0
}

# Sets _took_us to the wall time of one run of "$@", output in file $1 (as run_to).
time_to() {
  local out=$1 start
  shift
  start=${EPOCHREALTIME/[.,]/}
  run_to "$out" "$@" || return
  _took_us=$((${EPOCHREALTIME/[.,]/} - start))
  _started_us=$start
}

# ready with N workers: whole commands (ms), and ditask's start -> last worker ready.
measure_ready() {
  local n=$1 key="ready_$1" i out d=() b=() all=() lines stamps last
  MODULE_PARAMS=()
  ditask_cmd ready "$n"
  # Warm-up (page cache, dynamic loader), as in the launch benchmark.
  { time_to "$DITASK_LOG_DIR/$key-warmup.out" "$RAW" mesh --peers "$n" &&
    time_to "$DITASK_LOG_DIR/$key-warmup.out" "${DCMD[@]}"; } || return
  for ((i = 0; i < RUNS; i++)); do
    out="$DITASK_LOG_DIR/$key-raw-$i.out"
    time_to "$out" "$RAW" mesh --peers "$n" || return
    b+=("$_took_us")
    out="$DITASK_LOG_DIR/$key-ditask-$i.out"
    time_to "$out" "${DCMD[@]}" || return
    d+=("$_took_us")
    lines=$(awk -v want=" peers=$((n - 1)) " '/bench_mesh ready / && index($0, want) { k++ }
      END { print k + 0 }' "$out")
    if ((lines != n)); then
      echo "error: expected $n 'bench_mesh ready' lines with peers=$((n - 1)):"
      cat "$out"
      return 1
    fi
    mapfile -t stamps < <(grep -F "bench_mesh ready " "$out" | grep -Eo 'unix_us=[0-9]+' |
      sed 's/.*=//')
    last=$(fmax "${stamps[@]}")
    all+=("$((last - _started_us))")
  done
  echo "raw runs (us): ${b[*]}"
  echo "ditask runs (us): ${d[*]}; start -> all ready (us): ${all[*]}"
  F_DITASK[$key]=$(ms "$(_median "${all[@]}")") F_BASE[$key]=$(ms "$(_median "${b[@]}")")
  F_EXTRA[$key]=$(printf '"ditask_whole_command_ms":%s' "$(ms "$(_median "${d[@]}")")")
  F_FAILED[$key]=0
  key="ready_cmd_$n"
  F_DITASK[$key]=$(ms "$(_median "${d[@]}")") F_BASE[$key]=$(ms "$(_median "${b[@]}")")
  F_FAILED[$key]=0
}

# VmRSS of idle workers with 2 peers: the largest of the 3, median over the runs.
measure_rss() {
  local i out d=() b=() values
  MODULE_PARAMS=()
  ditask_cmd idle_rss 3
  for ((i = 0; i < RUNS; i++)); do
    out="$DITASK_LOG_DIR/rss-raw-$i.out"
    run_to "$out" "$RAW" mesh --peers 3 --rss || return
    mapfile -t values < <(grep -Eo 'vmrss_kb=[0-9]+' "$out" | sed 's/.*=//')
    ((${#values[@]} == 3)) || { echo "error: expected 3 vmrss_kb values:"; cat "$out"; return 1; }
    b+=("$(fmax "${values[@]}")")
    out="$DITASK_LOG_DIR/rss-ditask-$i.out"
    run_to "$out" "${DCMD[@]}" || return
    mapfile -t values < <(grep -F "bench_mesh idle_rss " "$out" | grep -Eo 'vmrss_kb=[0-9]+' |
      sed 's/.*=//')
    ((${#values[@]} == 3)) || { echo "error: expected 3 vmrss_kb values:"; cat "$out"; return 1; }
    d+=("$(fmax "${values[@]}")")
  done
  echo "raw runs (kB): ${b[*]}"
  echo "ditask runs (kB): ${d[*]}"
  F_DITASK[rss]=$(_median "${d[@]}") F_BASE[rss]=$(_median "${b[@]}") F_FAILED[rss]=0
}

# Like lib.sh's step, but a failure is reported and remembered instead of ending the script,
# so the other figures are still measured. mesh_step "description" cmd args...
MESH_FAILED=()
_mesh_step_count=0
mesh_step() {
  local desc=$1 log start rc=0
  shift
  _mesh_step_count=$((_mesh_step_count + 1))
  log="$DITASK_LOG_DIR/mesh-$(printf '%02d' "$_mesh_step_count")-$(_slug "$desc").log"
  start=$(_now_us)
  "$@" >"$log" 2>&1 </dev/null || rc=$?
  if ((rc == 0)); then
    echo "==> $desc ... ok ($(_fmt_duration $(($(_now_us) - start))))"
    return 0
  fi
  echo "==> $desc ... FAILED ($(_fmt_duration $(($(_now_us) - start))))"
  echo "---- last ${STEP_TAIL} lines of ${log#"$DITASK_ROOT"/} ----"
  tail -n "$STEP_TAIL" "$log"
  echo "---- end of log ----"
  MESH_FAILED+=("$desc")
}

# "2.31": ditask / baseline.
fratio() {
  awk -v d="$1" -v b="$2" 'BEGIN { if (b == 0) print "null"; else printf "%.2f\n", d / b }'
}

# "true"/"false"/"null": whether KEY met its target.
met_of() {
  local key=$1 target=${F_TARGET[$1]} r
  case "$target" in
    -) echo null ;;
    delivered)
      awk -v s="${F_EXTRA[$key]}" 'BEGIN { match(s, /"ditask":[0-9.]+/);
        v = substr(s, RSTART + 9, RLENGTH - 9); print (v + 0 == 100) ? "true" : "false" }' ;;
    *)
      r=$(fratio "${F_DITASK[$key]}" "${F_BASE[$key]}")
      awk -v r="$r" -v op="${target%% *}" -v t="${target##* }" 'BEGIN {
        if (r == "null") print "false"; else if (op == "<=") print (r + 0 <= t + 0) ? "true" : "false";
        else print (r + 0 >= t + 0) ? "true" : "false" }' ;;
  esac
}

mesh_report() {
  local key json ratio met target result
  echo
  echo "JSON, one line per figure (ratio = ditask / baseline):"
  for key in "${FIGURES[@]}"; do
    target=${F_TARGET[$key]}
    [[ $target == - ]] && target=""
    [[ $target == delivered ]] && target="100% delivered"
    if ((F_FAILED[$key])); then
      printf '{"figure":"%s","transport":"%s","unit":"%s","error":"failed, see %s"}\n' \
        "$key" "${F_TRANSPORT[$key]}" "${F_UNIT[$key]}" "${DITASK_LOG_DIR#"$DITASK_ROOT"/}"
      continue
    fi
    ratio=$(fratio "${F_DITASK[$key]}" "${F_BASE[$key]}")
    json=$(printf '{"figure":"%s","transport":"%s","unit":"%s","ditask":%s,"baseline":%s,' \
      "$key" "${F_TRANSPORT[$key]}" "${F_UNIT[$key]}" "${F_DITASK[$key]}" "${F_BASE[$key]}")
    [[ -z $target ]] && target=null || target="\"$target\""
    json+=$(printf '"ratio":%s,"target":%s,"met":%s,"runs":%s' "$ratio" "$target" \
      "$(met_of "$key")" "$RUNS")
    [[ -z "${F_EXTRA[$key]}" ]] || json+=",${F_EXTRA[$key]}"
    echo "$json}"
  done

  echo
  echo "ditask mesh vs raw Asio, median of $RUNS_TEXT (${BUILD_DIR#"$DITASK_ROOT"/}, $(nproc) cores):"
  printf '%-24s %-9s %12s %12s %7s  %-14s %s\n' figure transport ditask baseline ratio target \
    result
  for key in "${FIGURES[@]}"; do
    target=${F_TARGET[$key]}
    [[ $target == delivered ]] && target="100% delivered"
    if ((F_FAILED[$key])); then
      printf '%-24s %-9s %12s %12s %7s  %-14s %s\n' "${F_TITLE[$key]} (${F_UNIT[$key]})" \
        "${F_TRANSPORT[$key]}" - - - "$target" FAILED
      continue
    fi
    met=$(met_of "$key")
    case "$met" in true) result=met ;; false) result="NOT met" ;; *) result="(no target)" ;; esac
    printf '%-24s %-9s %12s %12s %7s  %-14s %s\n' "${F_TITLE[$key]} (${F_UNIT[$key]})" \
      "${F_TRANSPORT[$key]}" "${F_DITASK[$key]}" "${F_BASE[$key]}" \
      "$(fratio "${F_DITASK[$key]}" "${F_BASE[$key]}")" "$target" "$result"
  done
  for key in "${FIGURES[@]}"; do
    [[ -z "${F_NOTE[$key]}" ]] || echo "  ${F_TITLE[$key]} ${F_TRANSPORT[$key]}: ${F_NOTE[$key]}"
  done
}

mesh_main() {
  local proto n
  require_files "$DITASK" "$MESH_MODULE" "$RAW"
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/mesh-[0-9][0-9]-*.log "$DITASK_LOG_DIR"/*.out "$DITASK_LOG_DIR"/*.perf
  if command -v perf >/dev/null && perf stat -x, -e context-switches -o /dev/null true 2>/dev/null
  then
    PERF=1
  fi
  for proto in "${PROTOCOLS[@]}"; do
    add_figure "rtt_p50_$proto" "rtt p50" "$proto" us "<= 2.5"
    add_figure "rtt_p99_$proto" "rtt p99" "$proto" us "<= 2.5"
    mesh_step "rtt $proto: $ROUNDS round trips of 64 B, raw and ditask, $RUNS_TEXT" \
      measure_rtt "$proto"
  done
  add_figure stream "stream 64 B" tcp "events/s" ">= 8"
  mesh_step "stream: $COUNT events of 64 B, raw and ditask, $RUNS_TEXT" \
    measure_stream stream events_per_s 2 "$COUNT" 64
  add_figure big "stream 1 MiB" tcp "GB/s" ">= 0.7"
  mesh_step "stream: $BIG_COUNT events of 1 MiB, raw and ditask, $RUNS_TEXT" \
    measure_stream big gb_per_s 2 "$BIG_COUNT" 1048576
  add_figure fanout "fan-out 1->7" tcp "events/s" delivered
  mesh_step "fan-out: $FANOUT_COUNT events of 64 B to 7 peers, raw and ditask, $RUNS_TEXT" \
    measure_stream fanout events_per_s 8 "$FANOUT_COUNT" 64
  for n in "${WORKERS[@]}"; do
    if ((n == 32)); then
      add_figure "ready_$n" "ready N=$n" tcp ms "<= 2"
    else
      add_figure "ready_$n" "ready N=$n" tcp ms -
    fi
    add_figure "ready_cmd_$n" "ready+exit N=$n" tcp ms -
    mesh_step "ready N=$n: start to last worker ready, and whole commands, raw mesh and ditask, $RUNS_TEXT" \
      measure_ready "$n"
  done
  add_figure rss "idle RSS, 2 peers" tcp kB -
  mesh_step "idle RSS with 2 peers, raw and ditask, $RUNS_TEXT" measure_rss
  mesh_report
  if ((${#MESH_FAILED[@]})); then
    echo "error: failed: ${MESH_FAILED[*]} (logs in ${DITASK_LOG_DIR#"$DITASK_ROOT"/})" >&2
    return 1
  fi
}

if [[ $MODE == launch ]]; then
  launch_main
else
  mesh_main
fi
