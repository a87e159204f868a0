# SPDX-License-Identifier: MIT
# The python mode of scripts/bench.sh (sourced by it, after bench_mesh.sh, whose helpers it uses):
# two Python workers (python/bench/bench_python.py) beside two C++ workers (bench_mesh) doing the
# same, R interleaved runs, medians reported:
#   64-byte event round trip p50/p99 (bench_python rtt, bench_mesh rtt);
#   one-way 64-byte events/s (bench_python stream, bench_mesh stream; COUNT/10 events for Python);
#   the start of 32 workers until each returned (the launch mode's noop entry against a Python
#   entry that returns at once).
# No targets: the ratios say what Python costs on top of the C++ runtime.
# shellcheck shell=bash disable=SC2034

PY_BENCH="$DITASK_ROOT/python/bench/bench_python.py"
declare -A PYB

python_round() {
  local i=$1 out
  MODULE_PARAMS=("rounds=$ROUNDS" "warmup=$WARMUP")
  ditask_cmd rtt 2
  out="$DITASK_LOG_DIR/python-cpp-rtt-$i.out"
  run_to "$out" "${DCMD[@]}" || return
  PYB[cpp_p50]+=" $(field "$out" "bench_mesh rtt " p50_us)" || return
  PYB[cpp_p99]+=" $(field "$out" "bench_mesh rtt " p99_us)" || return
  out="$DITASK_LOG_DIR/python-py-rtt-$i.out"
  run_to "$out" "$DITASK" --package "$PY_BENCH" --main bench_python.rtt --parallel-workers 2 --timeout "$TIMEOUT" \
    -- "rounds=$ROUNDS" "warmup=$WARMUP" || return
  PYB[py_p50]+=" $(field "$out" "bench_python rtt " p50_us)" || return
  PYB[py_p99]+=" $(field "$out" "bench_python rtt " p99_us)" || return
  MODULE_PARAMS=("count=$COUNT" size=64)
  ditask_cmd stream 2
  out="$DITASK_LOG_DIR/python-cpp-stream-$i.out"
  run_to "$out" "${DCMD[@]}" || return
  PYB[cpp_stream]+=" $(field "$out" "bench_mesh stream " events_per_s)" || return
  out="$DITASK_LOG_DIR/python-py-stream-$i.out"
  run_to "$out" "$DITASK" --package "$PY_BENCH" --main bench_python.stream --parallel-workers 2 \
    --timeout "$TIMEOUT" -- "count=$PY_COUNT" || return
  PYB[py_stream]+=" $(field "$out" "bench_python stream " events_per_s)" || return
  python_start "$DITASK" --package "$BUILD_DIR/lib/ditask/plugins/libfaults.so" --main noop || return
  PYB[cpp_start]+=" $_took_ms"
  python_start "$DITASK" --package "$PY_BENCH" --main bench_python.noop || return
  PYB[py_start]+=" $_took_ms"
}

# The wall time of one 32-worker job of "$@" in ms (_took_ms).
python_start() {
  local start=${EPOCHREALTIME/[.,]/}
  "$@" --parallel-workers 32 >/dev/null 2>&1 </dev/null || { echo "error: '$*' failed" >&2; return 1; }
  _took_ms=$(((${EPOCHREALTIME/[.,]/} - start) / 1000))
}

python_measure() {
  local i
  for ((i = 0; i < RUNS; i++)); do
    python_round "$i" || return
  done
}

python_line() { ratio_line "$PY_JSON" "$PY_TABLE" "$@"; }

python_main() {
  local m
  PY_COUNT=$((COUNT / 10 > 1000 ? COUNT / 10 : 1000))
  require_files "$DITASK" "$MESH_MODULE" "$BUILD_DIR/lib/ditask/python/ditask/__init__.py"
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/python-*.out
  mesh_step "python: rtt, one-way stream and 32 workers' start, Python and C++, $RUNS_TEXT" python_measure
  if ((${#MESH_FAILED[@]})); then
    echo "error: failed: ${MESH_FAILED[*]} (logs in ${DITASK_LOG_DIR#"$DITASK_ROOT"/})" >&2
    return 1
  fi
  declare -A M
  for m in "${!PYB[@]}"; do
    # shellcheck disable=SC2086
    M[$m]=$(fmedian ${PYB[$m]})
  done
  PY_JSON=$(mktemp) PY_TABLE=$(mktemp)
  python_line "rtt p50" us "${M[py_p50]}" "C++ rtt p50" "${M[cpp_p50]}" -
  python_line "rtt p99" us "${M[py_p99]}" "C++ rtt p99" "${M[cpp_p99]}" -
  python_line "one-way 64 B" "events/s" "${M[py_stream]}" "C++ one-way 64 B" "${M[cpp_stream]}" -
  python_line "32 workers started" ms "${M[py_start]}" "C++ 32 workers" "${M[cpp_start]}" -
  echo
  echo "JSON, one line per figure (ratio = Python / C++; the 'ditask' column is Python's):"
  cat "$PY_JSON"
  echo
  echo "Python workers vs C++ workers on the same runtime, median of $RUNS_TEXT ($(nproc) cores):"
  ratio_header
  cat "$PY_TABLE"
  rm -f "$PY_JSON" "$PY_TABLE"
}
