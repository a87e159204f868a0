# SPDX-License-Identifier: MIT
# The mesh mode of scripts/bench.sh (sourced by it, after its options and build): ditask's mesh
# against raw Asio sockets and ZeroMQ, measured the same way in the same run. See bench.sh's
# header for the figures and docs/benchmarks.md for the latest results.
# shellcheck shell=bash disable=SC2034
# ========================================= mesh =========================================

MESH_MODULE="$BUILD_DIR/lib/ditask/plugins/libbench_mesh.so"
RAW="$BUILD_DIR/bin/ditask_raw_mesh_bench"
ZMQ="$BUILD_DIR/bin/ditask_zmq_mesh_bench"
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
# F_ZMQ holds ZeroMQ's median where it has one, F_ZTARGET the target of the ratio to it.
FIGURES=()
declare -A F_TITLE F_TRANSPORT F_UNIT F_DITASK F_BASE F_ZMQ F_TARGET F_ZTARGET F_EXTRA F_FAILED F_NOTE

# add_figure KEY TITLE TRANSPORT UNIT TARGET [ZMQ_TARGET]. A target is "<= 2" or ">= 0.7" (of the
# ratio to raw, or to ZeroMQ), "< 1", "delivered", "max 4" (of ditask's own value) or "-".
add_figure() {
  FIGURES+=("$1")
  F_TITLE[$1]=$2 F_TRANSPORT[$1]=$3 F_UNIT[$1]=$4 F_TARGET[$1]=$5 F_ZTARGET[$1]=${6:--}
  F_DITASK[$1]="" F_BASE[$1]="" F_ZMQ[$1]="" F_EXTRA[$1]="" F_FAILED[$1]=1 F_NOTE[$1]=""
}

# Runs "$@" with both cores kept busy by two `yes > /dev/null` (a loaded machine, where jobs run).
with_load() {
  local hogs=() rc=0
  yes >/dev/null &
  hogs+=($!)
  yes >/dev/null &
  hogs+=($!)
  "$@" || rc=$?
  kill "${hogs[@]}" 2>/dev/null
  wait "${hogs[@]}" 2>/dev/null
  return "$rc"
}

# rtt over protocol $1 (figure keys end with $2, "" or "_loaded"): R interleaved runs of the raw
# ping-pong, the bench_mesh rtt entry and ZeroMQ's.
measure_rtt() {
  local proto=$1 sfx=${2:-} i out perf_file d50=() d99=() dcs=() b50=() b99=() bcs=() dperf=() bperf=()
  local z50=() z99=() zcs=() wrap=() dinv=() binv=() zinv=() i50=() i99=() ics=() icmd
  MODULE_PARAMS=("rounds=$ROUNDS" "warmup=$WARMUP" inline=1)  # both handlers with on_inline
  ditask_cmd rtt 2 --protocol "$proto"
  icmd=("${DCMD[@]}")
  MODULE_PARAMS=("rounds=$ROUNDS" "warmup=$WARMUP")
  ditask_cmd rtt 2 --protocol "$proto"
  for ((i = 0; i < RUNS; i++)); do
    out="$DITASK_LOG_DIR/rtt-$proto$sfx-raw-$i.out"
    perf_file="$out.perf"
    ((PERF)) && wrap=(perf stat -x "," -e context-switches -o "$perf_file" --)
    run_to "$out" "${wrap[@]}" "$RAW" rtt --transport "$proto" --rounds "$ROUNDS" \
      --warmup "$WARMUP" || return
    b50+=("$(field "$out" "raw_mesh_bench rtt " p50_us)") || return
    b99+=("$(field "$out" "raw_mesh_bench rtt " p99_us)") || return
    bcs+=("$(field "$out" "raw_mesh_bench rtt " ctxsw_per_rt)") || return
    binv+=("$(field "$out" "raw_mesh_bench rtt " ctxsw_involuntary_per_rt)") || return
    ((PERF)) && bperf+=("$(perf_count "$perf_file")")
    cat "$out"
    out="$DITASK_LOG_DIR/rtt-$proto$sfx-ditask-$i.out"
    perf_file="$out.perf"
    ((PERF)) && wrap=(perf stat -x "," -e context-switches -o "$perf_file" --)
    run_to "$out" "${wrap[@]}" "${DCMD[@]}" || return
    d50+=("$(field "$out" "bench_mesh rtt " p50_us)") || return
    d99+=("$(field "$out" "bench_mesh rtt " p99_us)") || return
    dcs+=("$(field "$out" "bench_mesh rtt " ctxsw_per_rt)") || return
    dinv+=("$(field "$out" "bench_mesh rtt " ctxsw_involuntary_per_rt)") || return
    ((PERF)) && dperf+=("$(perf_count "$perf_file")")
    cat "$out"
    out="$DITASK_LOG_DIR/rtt-$proto$sfx-inline-$i.out"
    run_to "$out" "${icmd[@]}" || return
    i50+=("$(field "$out" "bench_mesh rtt " p50_us)") || return
    i99+=("$(field "$out" "bench_mesh rtt " p99_us)") || return
    ics+=("$(field "$out" "bench_mesh rtt " ctxsw_per_rt)") || return
    cat "$out"
    out="$DITASK_LOG_DIR/rtt-$proto$sfx-zmq-$i.out"
    run_to "$out" "$ZMQ" rtt --transport "$proto" --rounds "$ROUNDS" --warmup "$WARMUP" || return
    z50+=("$(field "$out" "zmq_mesh_bench rtt " p50_us)") || return
    z99+=("$(field "$out" "zmq_mesh_bench rtt " p99_us)") || return
    zcs+=("$(field "$out" "zmq_mesh_bench rtt " ctxsw_per_rt)") || return
    zinv+=("$(field "$out" "zmq_mesh_bench rtt " ctxsw_involuntary_per_rt)") || return
    cat "$out"
  done
  local extra p50=rtt_p50_$proto$sfx p99=rtt_p99_$proto$sfx cs=ctxsw_$proto$sfx
  extra=$(printf '"ctxsw_per_rt":{"ditask":%s,"baseline":%s,"zeromq":%s}' "$(fmedian "${dcs[@]}")" \
    "$(fmedian "${bcs[@]}")" "$(fmedian "${zcs[@]}")")
  # Of those, the involuntary ones (a runnable thread preempted: the kernel's doing, not a wait).
  local di bi zi inv
  di=$(fmedian "${dinv[@]}") bi=$(fmedian "${binv[@]}") zi=$(fmedian "${zinv[@]}")
  inv="\"involuntary_ctxsw_per_rt\":{\"ditask\":$di,\"baseline\":$bi,\"zeromq\":$zi}"
  extra+=",$inv"
  F_EXTRA[$cs]=$inv
  F_NOTE[$cs]="of which involuntary (a runnable thread preempted): ditask $di, raw $bi, ZeroMQ $zi"
  if ((PERF)) && [[ -n "${dperf[*]}" && -n "${bperf[*]}" ]]; then
    local total=$((ROUNDS + WARMUP)) dp bp
    dp=$(awk -v c="$(fmedian "${dperf[@]}")" -v n=$total 'BEGIN { printf "%.2f", c / n }')
    bp=$(awk -v c="$(fmedian "${bperf[@]}")" -v n=$total 'BEGIN { printf "%.2f", c / n }')
    extra+=$(printf ',"perf_ctxsw_per_rt_whole_command":{"ditask":%s,"baseline":%s}' "$dp" "$bp")
    F_NOTE[$p50]="perf, whole command incl. start-up, context switches per round trip: ditask $dp, baseline $bp"
  fi
  F_DITASK[$p50]=$(fmedian "${d50[@]}") F_BASE[$p50]=$(fmedian "${b50[@]}") F_ZMQ[$p50]=$(fmedian "${z50[@]}")
  F_DITASK[$p99]=$(fmedian "${d99[@]}") F_BASE[$p99]=$(fmedian "${b99[@]}") F_ZMQ[$p99]=$(fmedian "${z99[@]}")
  F_DITASK[$cs]=$(fmedian "${dcs[@]}") F_BASE[$cs]=$(fmedian "${bcs[@]}") F_ZMQ[$cs]=$(fmedian "${zcs[@]}")
  F_EXTRA[$p50]=$extra F_EXTRA[$p99]=$extra
  F_FAILED[$p50]=0 F_FAILED[$p99]=0 F_FAILED[$cs]=0
  # The same round trip with both handlers registered with on_inline (no dispatcher hand-off).
  local ip50=inline_rtt_p50_$proto$sfx ics_key=inline_ctxsw_$proto$sfx
  F_DITASK[$ip50]=$(fmedian "${i50[@]}") F_BASE[$ip50]=${F_BASE[$p50]} F_ZMQ[$ip50]=${F_ZMQ[$p50]}
  F_DITASK[$ics_key]=$(fmedian "${ics[@]}") F_BASE[$ics_key]=${F_BASE[$cs]} F_ZMQ[$ics_key]=${F_ZMQ[$cs]}
  F_NOTE[$ip50]="p99: on_inline $(fmedian "${i99[@]}") us, raw ${F_BASE[$p99]} us"
  F_FAILED[$ip50]=0 F_FAILED[$ics_key]=0
}

# One-way stream: measure_stream KEY FIELD WORKERS COUNT SIZE (FIELD: events_per_s or gb_per_s).
measure_stream() {
  local key=$1 what=$2 workers=$3 count=$4 size=$5 i out d=() b=() z=() dpct=() bpct=() zpct=()
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
    out="$DITASK_LOG_DIR/$key-zmq-$i.out"
    run_to "$out" "$ZMQ" stream --transport tcp --count "$count" --size "$size" \
      --readers $((workers - 1)) || return
    z+=("$(field "$out" "zmq_mesh_bench stream " "$what")") || return
    zpct+=("$(field "$out" "zmq_mesh_bench stream " delivered_pct)") || return
    cat "$out"
  done
  F_DITASK[$key]=$(fmedian "${d[@]}") F_BASE[$key]=$(fmedian "${b[@]}") F_ZMQ[$key]=$(fmedian "${z[@]}")
  F_EXTRA[$key]=$(printf '"delivered_pct_min":{"ditask":%s,"baseline":%s,"zeromq":%s}' \
    "$(fmin "${dpct[@]}")" "$(fmin "${bpct[@]}")" "$(fmin "${zpct[@]}")")
  F_NOTE[$key]="delivered/sent, lowest of the runs: ditask $(fmin "${dpct[@]}")%,"
  F_NOTE[$key]+=" raw $(fmin "${bpct[@]}")%, ZeroMQ $(fmin "${zpct[@]}")%"
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
# D / B with DECIMALS decimals (2, as tables print it, unless given). A target is decided on 9: 125.35 us
# against ZeroMQ's 125.97 is below it, though both ratios print as 1.00.
fratio() {
  awk -v d="$1" -v b="$2" -v p="${3:-2}" 'BEGIN { if (b == 0) print "null"; else printf "%.*f\n", p, d / b }'
}

# "true"/"false"/"null": whether RATIO (or, for "max N", VALUE) meets TARGET.
meets() {
  local target=$1 ratio=$2 value=$3
  case "$target" in
    - | "") echo null ;;
    max*) awk -v v="$value" -v t="${target##* }" 'BEGIN { print (v + 0 <= t + 0) ? "true" : "false" }' ;;
    *)
      awk -v r="$ratio" -v op="${target%% *}" -v t="${target##* }" 'BEGIN {
        if (r == "null" || r == "") print "false";
        else if (op == "<=") print (r + 0 <= t + 0) ? "true" : "false";
        else if (op == "<") print (r + 0 < t + 0) ? "true" : "false";
        else print (r + 0 >= t + 0) ? "true" : "false" }' ;;
  esac
}

# ratio_line JSON TABLE FIGURE UNIT VALUE BASELINE_NAME BASELINE TARGET: one JSON line appended
# to the file JSON and one row to the file TABLE (the rpc and redis modes' figures).
ratio_line() {
  local json=$1 table=$2 figure=$3 unit=$4 value=$5 bname=$6 base=$7 target=$8 ratio met verdict="(no target)"
  ratio=$(fratio "$value" "$base")
  met=$(meets "$target" "$(fratio "$value" "$base" 9)" "$value")
  printf '{"figure":"%s","unit":"%s","ditask":%s,"baseline":"%s","baseline_value":%s,"ratio":%s,"target":%s,"met":%s,"runs":%s}\n' \
    "$figure" "$unit" "$value" "$bname" "$base" "$ratio" \
    "$([[ $target == - ]] && echo null || echo "\"$target\"")" "$met" "$RUNS" >>"$json"
  [[ $met == true ]] && verdict=met
  [[ $met == false ]] && verdict="NOT met"
  printf '%-28s %12s %-26s %12s %7s  %-7s %s\n' "$figure ($unit)" "$value" "$bname" "$base" "$ratio" "$target" \
    "$verdict" >>"$table"
}

# ratio_header: the column titles of ratio_line's table.
ratio_header() {
  printf '%-28s %12s %-26s %12s %7s  %-7s %s\n' figure ditask baseline value ratio target result
}

# Whether KEY met its target against raw ("raw") or ZeroMQ ("zmq").
met_of() {
  local key=$1 which=$2
  if [[ $which == zmq ]]; then
    [[ -n "${F_ZMQ[$key]}" ]] || { echo null; return; }
    meets "${F_ZTARGET[$key]}" "$(fratio "${F_DITASK[$key]}" "${F_ZMQ[$key]}" 9)" "${F_DITASK[$key]}"
    return
  fi
  if [[ ${F_TARGET[$key]} == delivered ]]; then
    awk -v s="${F_EXTRA[$key]}" 'BEGIN { match(s, /"ditask":[0-9.]+/);
      v = substr(s, RSTART + 9, RLENGTH - 9); print (v + 0 == 100) ? "true" : "false" }'
    return
  fi
  meets "${F_TARGET[$key]}" "$(fratio "${F_DITASK[$key]}" "${F_BASE[$key]}" 9)" "${F_DITASK[$key]}"
}

# "met", "NOT met" or "" from two met_of answers.
result_of() {
  local first=$1 second=$2
  if [[ $first == false || $second == false ]]; then
    echo "NOT met"
  elif [[ $first == true || $second == true ]]; then
    echo met
  else
    echo "(no target)"
  fi
}

mesh_report() {
  local key json target ztarget zratio zvalue met zmet
  echo
  echo "JSON, one line per figure (ratio = ditask / raw baseline, zeromq_ratio = ditask / ZeroMQ):"
  for key in "${FIGURES[@]}"; do
    target=${F_TARGET[$key]} ztarget=${F_ZTARGET[$key]}
    [[ $target == delivered ]] && target="100% delivered"
    if ((F_FAILED[$key])); then
      printf '{"figure":"%s","transport":"%s","unit":"%s","error":"failed, see %s"}\n' \
        "$key" "${F_TRANSPORT[$key]}" "${F_UNIT[$key]}" "${DITASK_LOG_DIR#"$DITASK_ROOT"/}"
      continue
    fi
    zvalue=${F_ZMQ[$key]:-null}
    zratio=null
    [[ $zvalue == null ]] || zratio=$(fratio "${F_DITASK[$key]}" "$zvalue")
    json=$(printf '{"figure":"%s","transport":"%s","unit":"%s","ditask":%s,"baseline":%s,"zeromq":%s,' \
      "$key" "${F_TRANSPORT[$key]}" "${F_UNIT[$key]}" "${F_DITASK[$key]}" "${F_BASE[$key]}" "$zvalue")
    [[ $target == - ]] && target=null || target="\"$target\""
    [[ $ztarget == - ]] && ztarget=null || ztarget="\"$ztarget\""
    json+=$(printf '"ratio":%s,"zeromq_ratio":%s,"target":%s,"zeromq_target":%s,"met":%s,"zeromq_met":%s,"runs":%s' \
      "$(fratio "${F_DITASK[$key]}" "${F_BASE[$key]}")" "$zratio" "$target" "$ztarget" \
      "$(met_of "$key" raw)" "$(met_of "$key" zmq)" "$RUNS")
    [[ -z "${F_EXTRA[$key]}" ]] || json+=",${F_EXTRA[$key]}"
    echo "$json}"
  done

  echo
  echo "ditask mesh vs raw Asio and ZeroMQ, median of $RUNS_TEXT (${BUILD_DIR#"$DITASK_ROOT"/}, $(nproc) cores):"
  printf '%-30s %-9s %11s %11s %11s %6s %6s  %-9s %-6s %s\n' figure transport ditask raw zeromq \
    /raw /zmq "target" "/zmq" result
  for key in "${FIGURES[@]}"; do
    target=${F_TARGET[$key]} ztarget=${F_ZTARGET[$key]}
    [[ $target == delivered ]] && target="100%"
    if ((F_FAILED[$key])); then
      printf '%-30s %-9s %11s %11s %11s %6s %6s  %-9s %-6s %s\n' "${F_TITLE[$key]} (${F_UNIT[$key]})" \
        "${F_TRANSPORT[$key]}" - - - - - "$target" "$ztarget" FAILED
      continue
    fi
    zratio=-
    [[ -z "${F_ZMQ[$key]}" ]] || zratio=$(fratio "${F_DITASK[$key]}" "${F_ZMQ[$key]}")
    met=$(met_of "$key" raw) zmet=$(met_of "$key" zmq)
    printf '%-30s %-9s %11s %11s %11s %6s %6s  %-9s %-6s %s\n' "${F_TITLE[$key]} (${F_UNIT[$key]})" \
      "${F_TRANSPORT[$key]}" "${F_DITASK[$key]}" "${F_BASE[$key]}" "${F_ZMQ[$key]:--}" \
      "$(fratio "${F_DITASK[$key]}" "${F_BASE[$key]}")" "$zratio" "$target" "$ztarget" \
      "$(result_of "$met" "$zmet")"
  done
  for key in "${FIGURES[@]}"; do
    [[ -z "${F_NOTE[$key]}" ]] || echo "  ${F_TITLE[$key]} ${F_TRANSPORT[$key]}: ${F_NOTE[$key]}"
  done
}

mesh_main() {
  local proto n
  require_files "$DITASK" "$MESH_MODULE" "$RAW" "$ZMQ"
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/mesh-[0-9][0-9]-*.log "$DITASK_LOG_DIR"/*.out "$DITASK_LOG_DIR"/*.perf
  if command -v perf >/dev/null && perf stat -x, -e context-switches -o /dev/null true 2>/dev/null
  then
    PERF=1
  fi
  for proto in "${PROTOCOLS[@]}"; do
    add_figure "rtt_p50_$proto" "rtt p50" "$proto" us "<= 2" "< 1"
    add_figure "rtt_p99_$proto" "rtt p99" "$proto" us -
    add_figure "ctxsw_$proto" "rtt context switches" "$proto" "per rt" "max 4"
    add_figure "inline_rtt_p50_$proto" "rtt p50, on_inline" "$proto" us "<= 1.5" "< 1"
    add_figure "inline_ctxsw_$proto" "rtt ctx sw, on_inline" "$proto" "per rt" -
    mesh_step "rtt $proto: $ROUNDS round trips of 64 B, raw, ditask (on, on_inline) and ZeroMQ, $RUNS_TEXT" \
      measure_rtt "$proto"
  done
  add_figure stream "stream 64 B" tcp "events/s" ">= 8" ">= 1"
  mesh_step "stream: $COUNT events of 64 B, raw, ditask and ZeroMQ, $RUNS_TEXT" \
    measure_stream stream events_per_s 2 "$COUNT" 64
  add_figure big "stream 1 MiB" tcp "GB/s" ">= 0.8"
  mesh_step "stream: $BIG_COUNT events of 1 MiB, raw, ditask and ZeroMQ, $RUNS_TEXT" \
    measure_stream big gb_per_s 2 "$BIG_COUNT" 1048576
  add_figure fanout "fan-out 1->7" tcp "events/s" delivered
  mesh_step "fan-out: $FANOUT_COUNT events of 64 B to 7 peers, raw, ditask and ZeroMQ, $RUNS_TEXT" \
    measure_stream fanout events_per_s 8 "$FANOUT_COUNT" 64
  # The same round trip and stream with both cores busy (no targets: reported beside ZeroMQ).
  add_figure rtt_p50_tcp_loaded "rtt p50, 2 cores busy" tcp us -
  add_figure rtt_p99_tcp_loaded "rtt p99, 2 cores busy" tcp us -
  add_figure ctxsw_tcp_loaded "rtt ctx switches, busy" tcp "per rt" -
  add_figure inline_rtt_p50_tcp_loaded "rtt p50, on_inline, busy" tcp us -
  add_figure inline_ctxsw_tcp_loaded "rtt ctx sw, on_inline, busy" tcp "per rt" -
  mesh_step "rtt tcp with two yes > /dev/null running: raw, ditask and ZeroMQ, $RUNS_TEXT" \
    with_load measure_rtt tcp _loaded
  add_figure stream_loaded "stream 64 B, 2 cores busy" tcp "events/s" -
  mesh_step "stream with two yes > /dev/null running: raw, ditask and ZeroMQ, $RUNS_TEXT" \
    with_load measure_stream stream_loaded events_per_s 2 "$COUNT" 64
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
