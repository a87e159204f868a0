# SPDX-License-Identifier: MIT
# The trace mode of scripts/bench.sh (sourced by it, after bench_mesh.sh, whose helpers it uses):
# what `ditask --trace` costs. Each figure is measured without and with --trace (to a file in the
# log folder), the two interleaved in alternating order (off-on, on-off, ...) so drift of the
# machine falls on both, R runs (default 7), medians reported with the ratio on/off:
#   the one-way 64-byte event rate (bench_mesh stream, 2 workers, 2,000,000 events);
#   the 64-byte event round trip p50 (bench_mesh rtt, 20,000 round trips);
#   calls/s with 64 and with 1 call in flight (bench_rpc calls, 200,000 and 20,000 calls).
# Each figure twice: on both cores, as the mesh and RPC modes run, and with the whole job on one
# core (`taskset -c 0`). On two cores of a VM the rates with calls or events in flight swing by a
# third from run to run with no change at all (where the scheduler puts the two workers' threads);
# on one core they repeat within a few percent, so the cost of tracing shows there. The table's
# "spread" is the largest of the runs without --trace over the smallest: the machine's own noise.
# Target (issue 42): with --trace each figure at most 10% worse (rate ratio >= 0.9, p50 ratio <= 1.1).
# Beside each figure, the workers' CPU time for the same fixed work (user + system, from the
# launcher's --summary-json).
# shellcheck shell=bash disable=SC2034,SC2153

declare -A TRACE_FIG TRACE_CPU
TRACE_KEYS=(stream64 rtt calls64 calls1)
TRACE_CORES=(2 1)

# trace_run KEY CORES SIDE RUN: one measurement; appends the value to TRACE_FIG[KEY,CORES,SIDE]
# and the workers' CPU ms to TRACE_CPU[KEY,CORES,SIDE].
trace_run() {
  local key=$1 cores=$2 side=$3 i=$4 out value summary cpu name="trace-$1-$2cpu-$3-$4"
  summary="$DITASK_LOG_DIR/$name.summary.json"
  out="$DITASK_LOG_DIR/$name.out"
  local run=("$DITASK") extra=(--summary-json "$summary")
  ((cores == 1)) && run=(taskset -c 0 "$DITASK")
  [[ $side == on ]] && extra+=(--trace "$DITASK_LOG_DIR/$name.json")
  case $key in
    stream64)
      run_to "$out" "${run[@]}" --package "$MESH_MODULE" --main stream --parallel-workers 2 --timeout "$TIMEOUT" \
        "${extra[@]}" -- count=2000000 size=64 || return
      value=$(grep -o 'events_per_s=[0-9.]*' "$out" | head -n 1 | cut -d= -f2) ;;
    rtt)
      run_to "$out" "${run[@]}" --package "$MESH_MODULE" --main rtt --parallel-workers 2 --timeout "$TIMEOUT" \
        "${extra[@]}" -- "rounds=$ROUNDS" warmup=1000 || return
      value=$(grep -o 'p50_us=[0-9.]*' "$out" | head -n 1 | cut -d= -f2) ;;
    calls64 | calls1)
      local inflight=${key#calls} rounds=200000
      [[ $inflight == 1 ]] && rounds=20000
      run_to "$out" "${run[@]}" --package "$RPC_MODULE" --main calls --parallel-workers 2 --timeout "$TIMEOUT" \
        "${extra[@]}" -- "rounds=$rounds" "inflight=$inflight" || return
      value=$(sed -n 's/.*calls_per_s=\([0-9]*\).*/\1/p' "$out" | head -n 1) ;;
  esac
  [[ -n $value ]] || { echo "error: no figure in $out"; return 1; }
  TRACE_FIG[$key,$cores,$side]+="$value "
  # Each worker's own cpu_*_seconds (indented 6: its attempts' copies are deeper), in ms.
  cpu=$(awk '/^      "cpu_(user|system)_seconds": / { sum += $2 } END { printf "%.0f", sum * 1000 }' "$summary")
  TRACE_CPU[$key,$cores,$side]+="$cpu "
  rm -f "$DITASK_LOG_DIR/$name.json"  # tens of MB each
}

trace_measure() {
  local key=$1 cores=$2 i
  for ((i = 1; i <= RUNS; i++)); do
    if ((i % 2)); then
      trace_run "$key" "$cores" off "$i" && trace_run "$key" "$cores" on "$i" || return
    else
      trace_run "$key" "$cores" on "$i" && trace_run "$key" "$cores" off "$i" || return
    fi
  done
}

# trace_ratio ON OFF: on/off with two decimals.
trace_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }

trace_main() {
  local key cores off on ratio verdict target label cpu_off cpu_on spread
  RPC_MODULE="$BUILD_DIR/lib/ditask/plugins/libbench_rpc.so"
  require_files "$DITASK" "$MESH_MODULE" "$RPC_MODULE"
  command -v taskset >/dev/null || { echo "error: taskset (util-linux) is needed for the one-core runs"; return 1; }
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/trace-*
  for cores in "${TRACE_CORES[@]}"; do
    for key in "${TRACE_KEYS[@]}"; do
      mesh_step "trace: $key on $cores core(s), without and with --trace, $RUNS_TEXT" trace_measure "$key" "$cores" ||
        return 1
    done
  done
  echo
  printf '%-32s %5s %10s %10s %7s  %-14s %7s %10s %9s %7s\n' "figure (medians of $RUNS_TEXT)" "cores" "off" \
    "--trace" "on/off" "target" "spread" "cpu ms off" "--trace" "on/off"
  for cores in "${TRACE_CORES[@]}"; do
    for key in "${TRACE_KEYS[@]}"; do
      # shellcheck disable=SC2086
      off=$(fmedian ${TRACE_FIG[$key,$cores,off]})
      # shellcheck disable=SC2086
      on=$(fmedian ${TRACE_FIG[$key,$cores,on]})
      # shellcheck disable=SC2086
      cpu_off=$(fmedian ${TRACE_CPU[$key,$cores,off]})
      # shellcheck disable=SC2086
      cpu_on=$(fmedian ${TRACE_CPU[$key,$cores,on]})
      ratio=$(trace_ratio "$on" "$off")
      if [[ $key == rtt ]]; then
        target="<= 1.10"
        verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.10) ? "met" : "NOT met" }')
      else
        target=">= 0.90"
        verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.90) ? "met" : "NOT met" }')
      fi
      case $key in
        stream64) label="one-way 64 B events/s" ;;
        rtt) label="64 B event round trip p50 (us)" ;;
        calls64) label="calls/s, 64 in flight" ;;
        calls1) label="calls/s, 1 in flight" ;;
      esac
      # The spread: the largest off run over the smallest, what the machine alone varies.
      # shellcheck disable=SC2086
      spread=$(trace_ratio "$(fmax ${TRACE_FIG[$key,$cores,off]})" "$(fmin ${TRACE_FIG[$key,$cores,off]})")
      printf '%-32s %5s %10s %10s %7s  %-14s %7s %10s %9s %7s\n' "$label" "$cores" "$off" "$on" "$ratio" \
        "$target $verdict" "$spread" "$cpu_off" "$cpu_on" "$(trace_ratio "$cpu_on" "$cpu_off")"
    done
  done
}
