# SPDX-License-Identifier: MIT
# The redis mode of scripts/bench.sh (sourced by it, after bench_mesh.sh, whose helpers it uses):
# ditask over --mq-type redis against plain hiredis doing the same, through one redis-server
# this script starts on a free loopback port (and stops), R interleaved runs, medians reported
# (tests/bench/redis_baseline_bench.cpp):
#   64-byte round trip p50/p99 (bench_mesh rtt) beside hiredis PUBLISH + echo subscriber;
#   one-way 64-byte events/s (bench_mesh stream) beside one blocking PUBLISH per message (what
#   DI-engine does) and pipelined PUBLISHes.
# Targets: round trip p50 <= 1.5x plain hiredis; one-way rate >= 0.6x the pipelined baseline.
# shellcheck shell=bash disable=SC2034

REDIS_BASELINE="$BUILD_DIR/bin/ditask_redis_baseline_bench"
declare -A RDS

# Starts redis-server on a free port (REDIS_PORT, REDIS_PID); tries a few random ports.
redis_start() {
  local try
  REDIS_DIR=$(mktemp -d)
  for try in 1 2 3 4 5 6 7 8; do
    REDIS_PORT=$((20000 + RANDOM % 30000))
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$REDIS_DIR" \
      --logfile "$REDIS_DIR/redis.log" --daemonize no &
    REDIS_PID=$!
    for _ in $(seq 1 200); do
      if redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
        return 0
      fi
      kill -0 "$REDIS_PID" 2>/dev/null || break
      sleep 0.01
    done
    kill "$REDIS_PID" 2>/dev/null
    wait "$REDIS_PID" 2>/dev/null
  done
  echo "error: could not start redis-server (is the redis-server package installed?)" >&2
  return 1
}

redis_stop() {
  kill "$REDIS_PID" 2>/dev/null
  wait "$REDIS_PID" 2>/dev/null
  rm -rf "$REDIS_DIR"
}

# One run of every figure; appends each value to RDS[<name>] (space-separated).
redis_round() {
  local i=$1 out over=(--mq-type redis --redis-port "$REDIS_PORT")
  out="$DITASK_LOG_DIR/redis-base-rtt-$i.out"
  run_to "$out" "$REDIS_BASELINE" rtt --port "$REDIS_PORT" --rounds "$ROUNDS" --warmup "$WARMUP" || return
  RDS[base_p50]+=" $(field "$out" "redis_baseline rtt " p50_us)" || return
  RDS[base_p99]+=" $(field "$out" "redis_baseline rtt " p99_us)" || return
  MODULE_PARAMS=("rounds=$ROUNDS" "warmup=$WARMUP")
  ditask_cmd rtt 2 "${over[@]}"
  out="$DITASK_LOG_DIR/redis-rtt-$i.out"
  run_to "$out" "${DCMD[@]}" || return
  RDS[p50]+=" $(field "$out" "bench_mesh rtt " p50_us)" || return
  RDS[p99]+=" $(field "$out" "bench_mesh rtt " p99_us)" || return
  out="$DITASK_LOG_DIR/redis-base-pipelined-$i.out"
  run_to "$out" "$REDIS_BASELINE" stream --port "$REDIS_PORT" --count "$COUNT" --pipelined || return
  RDS[base_pipelined]+=" $(field "$out" "redis_baseline stream " events_per_s)" || return
  out="$DITASK_LOG_DIR/redis-base-blocking-$i.out"
  run_to "$out" "$REDIS_BASELINE" stream --port "$REDIS_PORT" --count "$BLOCKING_COUNT" || return
  RDS[base_blocking]+=" $(field "$out" "redis_baseline stream " events_per_s)" || return
  MODULE_PARAMS=("count=$COUNT" size=64)
  ditask_cmd stream 2 "${over[@]}"
  out="$DITASK_LOG_DIR/redis-stream-$i.out"
  run_to "$out" "${DCMD[@]}" || return
  RDS[stream]+=" $(field "$out" "bench_mesh stream " events_per_s)" || return
  RDS[delivered]+=" $(field "$out" "bench_mesh stream " delivered_pct)" || return
}

redis_measure() {
  local i rc=0
  redis_start || return
  for ((i = 0; i < RUNS; i++)); do
    redis_round "$i" || { rc=1; break; }
  done
  redis_stop
  return "$rc"
}

# redis_line FIGURE UNIT VALUE BASELINE_NAME BASELINE TARGET: one JSON line and one table row.
redis_line() { ratio_line "$REDIS_JSON" "$REDIS_TABLE" "$@"; }

redis_main() {
  local m
  BLOCKING_COUNT=$((COUNT / 10 > 1000 ? COUNT / 10 : 1000))
  require_files "$DITASK" "$MESH_MODULE" "$REDIS_BASELINE"
  command -v redis-server >/dev/null || { echo "error: redis-server is not installed" >&2; return 1; }
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/redis-*.out
  mesh_step "redis: rtt and one-way stream over Redis, hiredis blocking and pipelined, $RUNS_TEXT" redis_measure
  if ((${#MESH_FAILED[@]})); then
    echo "error: failed: ${MESH_FAILED[*]} (logs in ${DITASK_LOG_DIR#"$DITASK_ROOT"/})" >&2
    return 1
  fi
  declare -A M
  for m in "${!RDS[@]}"; do
    # shellcheck disable=SC2086
    M[$m]=$(fmedian ${RDS[$m]})
  done
  REDIS_JSON=$(mktemp) REDIS_TABLE=$(mktemp)
  redis_line "rtt p50" us "${M[p50]}" "hiredis rtt p50" "${M[base_p50]}" "<= 1.5"
  redis_line "rtt p99" us "${M[p99]}" "hiredis rtt p99" "${M[base_p99]}" -
  redis_line "one-way 64 B" "events/s" "${M[stream]}" "hiredis pipelined PUBLISH" "${M[base_pipelined]}" ">= 0.6"
  redis_line "one-way 64 B" "events/s" "${M[stream]}" "hiredis blocking PUBLISH" "${M[base_blocking]}" -
  redis_line "delivered" "%" "${M[delivered]}" "sent" 100 -
  echo
  echo "JSON, one line per figure (ratio = ditask / baseline):"
  cat "$REDIS_JSON"
  echo
  echo "ditask over Redis vs plain hiredis, median of $RUNS_TEXT (one redis-server, loopback, $(nproc) cores):"
  ratio_header
  cat "$REDIS_TABLE"
  rm -f "$REDIS_JSON" "$REDIS_TABLE"
}
