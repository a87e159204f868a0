# SPDX-License-Identifier: MIT
# The trace mode of scripts/bench.sh (sourced by it, after bench_mesh.sh, whose helpers it uses):
# what `ditask --trace` costs. Each figure is measured without and with --trace (to a file in the
# log folder), the two interleaved, R runs (default 5), medians reported with the ratio on/off:
#   the one-way 64-byte event rate (bench_mesh stream, 2 workers, 2,000,000 events);
#   the 64-byte event round trip p50 (bench_mesh rtt, 20,000 round trips);
#   calls/s with 64 and with 1 call in flight (bench_rpc calls, 200,000 and 20,000 calls).
# Target (issue 42): with --trace each figure at most 10% worse (rate ratio >= 0.9, p50 ratio <= 1.1).
# shellcheck shell=bash disable=SC2034

declare -A TRACE_FIG

# trace_run KEY SIDE RUN: one measurement; appends the value to TRACE_FIG[KEY,SIDE].
trace_run() {
  local key=$1 side=$2 i=$3 out value
  local extra=()
  [[ $side == on ]] && extra=(--trace "$DITASK_LOG_DIR/trace-$key-$i.json")
  out="$DITASK_LOG_DIR/trace-$key-$side-$i.out"
  case $key in
    stream64)
      run_to "$out" "$DITASK" --package "$MESH_MODULE" --main stream --parallel-workers 2 --timeout "$TIMEOUT" \
        "${extra[@]}" -- count=2000000 size=64 || return
      value=$(grep -o 'events_per_s=[0-9.]*' "$out" | head -n 1 | cut -d= -f2) ;;
    rtt)
      run_to "$out" "$DITASK" --package "$MESH_MODULE" --main rtt --parallel-workers 2 --timeout "$TIMEOUT" \
        "${extra[@]}" -- "rounds=$ROUNDS" warmup=1000 || return
      value=$(grep -o 'p50_us=[0-9.]*' "$out" | head -n 1 | cut -d= -f2) ;;
    calls64 | calls1)
      local inflight=${key#calls} rounds=200000
      [[ $inflight == 1 ]] && rounds=20000
      run_to "$out" "$DITASK" --package "$RPC_MODULE" --main calls --parallel-workers 2 --timeout "$TIMEOUT" \
        "${extra[@]}" -- "rounds=$rounds" "inflight=$inflight" || return
      value=$(sed -n 's/.*calls_per_s=\([0-9]*\).*/\1/p' "$out" | head -n 1) ;;
  esac
  [[ -n $value ]] || { echo "error: no figure in $out"; return 1; }
  TRACE_FIG[$key,$side]+="$value "
  rm -f "$DITASK_LOG_DIR/trace-$key-$i.json"  # tens of MB each
}

trace_measure() {
  local key=$1 i
  for ((i = 1; i <= RUNS; i++)); do
    trace_run "$key" off "$i" || return
    trace_run "$key" on "$i" || return
  done
}

trace_main() {
  local key off on ratio verdict target
  RPC_MODULE="$BUILD_DIR/lib/ditask/plugins/libbench_rpc.so"
  require_files "$DITASK" "$MESH_MODULE" "$RPC_MODULE"
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/trace-*
  for key in stream64 rtt calls64 calls1; do
    mesh_step "trace: $key without and with --trace, $RUNS_TEXT" trace_measure "$key" || return 1
  done
  echo
  printf '%-34s %14s %14s %8s  %s\n' "figure (medians of $RUNS_TEXT)" "off" "--trace" "on/off" "target"
  for key in stream64 rtt calls64 calls1; do
    # shellcheck disable=SC2086
    off=$(fmedian ${TRACE_FIG[$key,off]})
    # shellcheck disable=SC2086
    on=$(fmedian ${TRACE_FIG[$key,on]})
    ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.2f", a / b }')
    if [[ $key == rtt ]]; then
      target="<= 1.10"
      verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.10) ? "met" : "NOT met" }')
    else
      target=">= 0.90"
      verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.90) ? "met" : "NOT met" }')
    fi
    case $key in
      stream64) printf '%-34s' "one-way 64 B events/s" ;;
      rtt) printf '%-34s' "64 B event round trip p50 (us)" ;;
      calls64) printf '%-34s' "calls/s, 64 in flight" ;;
      calls1) printf '%-34s' "calls/s, 1 in flight" ;;
    esac
    printf ' %14s %14s %8s  %s %s\n' "$off" "$on" "$ratio" "$target" "$verdict"
  done
}
