# SPDX-License-Identifier: MIT
# The rpc mode of scripts/bench.sh (sourced by it, after bench_mesh.sh, whose helpers it uses):
# remote calls against the mesh's own event round trip and the raw Asio ping-pong, measured in
# the same run, R interleaved runs each, medians reported. Figures (2 workers, tcp):
#   call p50/p99 and calls/s with 1, 8 and 64 calls of 64 B in flight (bench_rpc calls), of an
#   echo defined with define() and one defined with define_inline();
#   a 1 MiB argument's round trip; the event round trip (bench_mesh rtt) and the raw one; the
#   one-way 64-byte event rate (bench_mesh stream); calls/s with 64 in flight over plain blocking
#   sockets (ditask_raw_calls_bench: one thread a side, each read's answers in one write); and
#   gRPC beside them (ditask_grpc_calls_bench: Debian's gRPC 1.51, callback API, the same calls
#   at 1, 8 and 64 in flight and the 1 MiB call), where it was built.
# Targets: call p50 (1 in flight) <= 1.2x the event round trip; calls/s with 64 in flight >= 0.3x
# the one-way event rate; against gRPC, ahead on every figure (calls/s >= 1x, p50 <= 1x).
# shellcheck shell=bash disable=SC2034

RPC_MODULE="$BUILD_DIR/lib/ditask/plugins/libbench_rpc.so"
RAW_CALLS="$BUILD_DIR/bin/ditask_raw_calls_bench"
GRPC_CALLS="$BUILD_DIR/bin/ditask_grpc_calls_bench"
declare -A RPC

# rpc_cmd ARGS...: the bench_rpc calls entry with module parameters ARGS.
rpc_cmd() {
  RCMD=("$DITASK" --package "$RPC_MODULE" --main calls --parallel-workers 2 --timeout "$TIMEOUT" -- "$@"
        "timeout_s=$((TIMEOUT > 20 ? TIMEOUT - 10 : TIMEOUT))")
}

# One run of everything; appends each value to RPC[<name>] (space-separated).
rpc_round() {
  local i=$1 out k
  out="$DITASK_LOG_DIR/rpc-raw-$i.out"
  run_to "$out" "$RAW" rtt --transport tcp --rounds "$ROUNDS" --warmup "$WARMUP" || return
  RPC[raw_p50]+=" $(field "$out" "raw_mesh_bench rtt " p50_us)" || return
  MODULE_PARAMS=("rounds=$ROUNDS" "warmup=$WARMUP")
  ditask_cmd rtt 2 --protocol tcp
  out="$DITASK_LOG_DIR/rpc-event-$i.out"
  run_to "$out" "${DCMD[@]}" || return
  RPC[event_p50]+=" $(field "$out" "bench_mesh rtt " p50_us)" || return
  RPC[event_p99]+=" $(field "$out" "bench_mesh rtt " p99_us)" || return
  for k in 1 8 64; do
    rpc_cmd "rounds=$ROUNDS" "warmup=$WARMUP" "inflight=$k" size=64
    out="$DITASK_LOG_DIR/rpc-calls-$k-$i.out"
    run_to "$out" "${RCMD[@]}" || return
    RPC[p50_$k]+=" $(field "$out" "bench_rpc calls " p50_us)" || return
    RPC[p99_$k]+=" $(field "$out" "bench_rpc calls " p99_us)" || return
    RPC[rate_$k]+=" $(field "$out" "bench_rpc calls " calls_per_s)" || return
    rpc_cmd "rounds=$ROUNDS" "warmup=$WARMUP" "inflight=$k" size=64 inline=1  # echo with define_inline
    out="$DITASK_LOG_DIR/rpc-inline-$k-$i.out"
    run_to "$out" "${RCMD[@]}" || return
    RPC[ip50_$k]+=" $(field "$out" "bench_rpc calls " p50_us)" || return
    RPC[irate_$k]+=" $(field "$out" "bench_rpc calls " calls_per_s)" || return
  done
  for k in 8 64; do
    out="$DITASK_LOG_DIR/rpc-raw-calls-$k-$i.out"
    run_to "$out" "$RAW_CALLS" calls --inflight "$k" --rounds "$((ROUNDS * 10))" --warmup "$WARMUP" || return
    RPC[raw_rate_$k]+=" $(field "$out" "raw_calls_bench calls " calls_per_s)" || return
  done
  if [[ -x $GRPC_CALLS ]]; then
    for k in 1 8 64; do
      out="$DITASK_LOG_DIR/rpc-grpc-$k-$i.out"
      run_to "$out" "$GRPC_CALLS" calls --inflight "$k" --rounds "$ROUNDS" --warmup "$WARMUP" || return
      RPC[grpc_p50_$k]+=" $(field "$out" "grpc_calls_bench calls " p50_us)" || return
      RPC[grpc_rate_$k]+=" $(field "$out" "grpc_calls_bench calls " calls_per_s)" || return
    done
    out="$DITASK_LOG_DIR/rpc-grpc-big-$i.out"
    run_to "$out" "$GRPC_CALLS" calls --inflight 1 --rounds "$BIG_ROUNDS" --warmup 20 --size 1048576 || return
    RPC[grpc_big_p50]+=" $(field "$out" "grpc_calls_bench calls " p50_us)" || return
  fi
  rpc_cmd "rounds=$BIG_ROUNDS" warmup=20 inflight=1 size=1048576
  out="$DITASK_LOG_DIR/rpc-big-$i.out"
  run_to "$out" "${RCMD[@]}" || return
  RPC[big_p50]+=" $(field "$out" "bench_rpc calls " p50_us)" || return
  MODULE_PARAMS=("count=$COUNT" size=64)
  ditask_cmd stream 2
  out="$DITASK_LOG_DIR/rpc-stream-$i.out"
  run_to "$out" "${DCMD[@]}" || return
  RPC[stream]+=" $(field "$out" "bench_mesh stream " events_per_s)" || return
}

rpc_measure() {
  local i
  for ((i = 0; i < RUNS; i++)); do
    rpc_round "$i" || return
  done
}

# rpc_line FIGURE UNIT VALUE BASELINE_NAME BASELINE TARGET: one JSON line and one table row.
rpc_line() { ratio_line "$RPC_JSON" "$RPC_TABLE" "$@"; }

rpc_main() {
  local m k
  BIG_ROUNDS=${BIG_ROUNDS:-200}
  require_files "$DITASK" "$RPC_MODULE" "$MESH_MODULE" "$RAW" "$RAW_CALLS"
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/rpc-*.out
  mesh_step "rpc: calls (1, 8, 64 in flight; define and define_inline), 1 MiB calls, event rtt, raw rtt, event stream, $RUNS_TEXT" \
    rpc_measure
  if ((${#MESH_FAILED[@]})); then
    echo "error: failed: ${MESH_FAILED[*]} (logs in ${DITASK_LOG_DIR#"$DITASK_ROOT"/})" >&2
    return 1
  fi
  declare -A M
  for m in "${!RPC[@]}"; do
    # shellcheck disable=SC2086
    M[$m]=$(fmedian ${RPC[$m]})
  done
  RPC_JSON=$(mktemp) RPC_TABLE=$(mktemp)
  rpc_line "call p50, 1 in flight" us "${M[p50_1]}" "event rtt p50" "${M[event_p50]}" "<= 1.2"
  rpc_line "call p50, 1 in flight" us "${M[p50_1]}" "raw rtt p50" "${M[raw_p50]}" -
  rpc_line "call p99, 1 in flight" us "${M[p99_1]}" "event rtt p99" "${M[event_p99]}" -
  for k in 1 8 64; do
    local target=-
    ((k == 64)) && target=">= 0.3"
    rpc_line "calls/s, $k in flight" "calls/s" "${M[rate_$k]}" "one-way events/s" "${M[stream]}" "$target"
  done
  for k in 8 64; do
    rpc_line "calls/s, $k in flight" "calls/s" "${M[rate_$k]}" "raw calls/s, $k in flight" "${M[raw_rate_$k]}" ">= 0.5"
    rpc_line "inline calls/s, $k in flight" "calls/s" "${M[irate_$k]}" "raw calls/s, $k in flight" "${M[raw_rate_$k]}" ">= 0.5"
  done
  rpc_line "inline call p50, 1 in flight" us "${M[ip50_1]}" "event rtt p50" "${M[event_p50]}" -
  rpc_line "inline call p50, 1 in flight" us "${M[ip50_1]}" "raw rtt p50" "${M[raw_p50]}" -
  # The raw program against the same baseline as the target's (it is no ceiling: docs/benchmarks.md).
  rpc_line "raw calls/s, 64 in flight" "calls/s" "${M[raw_rate_64]}" "one-way events/s" "${M[stream]}" -
  for k in 8 64; do
    rpc_line "call p50, $k in flight" us "${M[p50_$k]}" "event rtt p50" "${M[event_p50]}" -
  done
  rpc_line "1 MiB call p50" us "${M[big_p50]}" "64 B call p50" "${M[p50_1]}" -
  if [[ -n ${M[grpc_big_p50]:-} ]]; then
    for k in 1 8 64; do
      rpc_line "calls/s, $k in flight" "calls/s" "${M[rate_$k]}" "gRPC calls/s, $k in flight" "${M[grpc_rate_$k]}" ">= 1"
      rpc_line "call p50, $k in flight" us "${M[p50_$k]}" "gRPC call p50, $k in flight" "${M[grpc_p50_$k]}" "<= 1"
      rpc_line "inline calls/s, $k in flight" "calls/s" "${M[irate_$k]}" "gRPC calls/s, $k in flight" "${M[grpc_rate_$k]}" ">= 1"
      rpc_line "inline call p50, $k in flight" us "${M[ip50_$k]}" "gRPC call p50, $k in flight" "${M[grpc_p50_$k]}" "<= 1"
    done
    rpc_line "1 MiB call p50" us "${M[big_p50]}" "gRPC 1 MiB call p50" "${M[grpc_big_p50]}" "<= 1"
  else
    echo "note: no $GRPC_CALLS (gRPC not found when it was built): no gRPC figures"
  fi
  echo
  echo "JSON, one line per figure (ratio = ditask / baseline):"
  cat "$RPC_JSON"
  echo
  echo "ditask rpc vs the mesh's own events and raw Asio, median of $RUNS_TEXT (tcp, $(nproc) cores):"
  ratio_header
  cat "$RPC_TABLE"
  rm -f "$RPC_JSON" "$RPC_TABLE"
}
