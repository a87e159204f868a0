# SPDX-License-Identifier: MIT
# The autograd mode of scripts/bench.sh (sourced by it, after bench_mesh.sh, whose helpers it
# uses): the PyTorch RPC tutorial's training iteration (forward through the parameter server,
# distributed backward, distributed optimizer step, the context's end) between a trainer and a
# parameter server (2 workers, tcp), R interleaved runs, medians reported. Measured in each run:
#   ditask    bench_autograd iteration (torch/bench/bench_autograd.cpp): the iteration's p50 and
#             p99, the same model in one process with LibTorch (local), the calls one iteration
#             makes and an empty call's round trip;
#   pinned    the same with the whole job on one CPU (taskset -c 0): no cross-CPU wake-ups;
#   PyTorch   torch/bench/pytorch_rnn_bench.py with Debian's python3-torch 1.13 (TensorPipe), the
#             tutorial's own code, when /usr/bin/python3 imports torch (else reported as absent).
# Targets (the issue's): iteration p50 <= 1 ms, and <= 1.5x (local p50 + calls x call rtt p50).
# Every process runs with OMP_NUM_THREADS=1 (2 workers on 2 cores: intra-op threads only add
# wake-ups to a model this small; the local baselines run the same way).
# shellcheck shell=bash disable=SC2034

AUTOGRAD_MODULE="$BUILD_DIR/lib/ditask/plugins/libbench_autograd.so"
PYTORCH_BENCH="$DITASK_ROOT/torch/bench/pytorch_rnn_bench.py"
declare -A AG

# Whether Debian's python3 has torch (the PyTorch baseline is optional).
have_pytorch() { /usr/bin/python3 -c 'import torch.distributed.rpc' >/dev/null 2>&1; }

autograd_round() {
  local i=$1 out cmd
  cmd=("$DITASK" --package "$AUTOGRAD_MODULE" --main iteration --parallel-workers 2 --timeout "$TIMEOUT" --
       "rounds=$ROUNDS" "warmup=$WARMUP")
  out="$DITASK_LOG_DIR/autograd-ditask-$i.out"
  run_to "$out" env OMP_NUM_THREADS=1 "${cmd[@]}" || return
  local k
  for k in dist_p50_us dist_p99_us local_p50_us rpcs rtt_p50_us forward_p50_us backward_p50_us step_p50_us release_p50_us; do
    AG[$k]+=" $(field "$out" "bench_autograd iteration" "$k")" || return
  done
  out="$DITASK_LOG_DIR/autograd-pinned-$i.out"
  run_to "$out" env OMP_NUM_THREADS=1 taskset -c 0 "${cmd[@]}" || return
  for k in dist_p50_us local_p50_us rpcs rtt_p50_us; do
    AG[pinned_$k]+=" $(field "$out" "bench_autograd iteration" "$k")" || return
  done
  if ((HAVE_PYTORCH)); then
    out="$DITASK_LOG_DIR/autograd-pytorch-$i.out"
    run_to "$out" env OMP_NUM_THREADS=1 /usr/bin/python3 "$PYTORCH_BENCH" "$ROUNDS" "$WARMUP" "$(free_port)" || return
    for k in dist_p50_us dist_p99_us local_p50_us init_rpc_s; do
      AG[pytorch_$k]+=" $(field "$out" "pytorch_rnn_bench iteration" "$k")" || return
    done
  fi
}

# A TCP port nobody listens on now (PyTorch's rendezvous needs one).
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

autograd_measure() {
  local i
  for ((i = 0; i < RUNS; i++)); do
    autograd_round "$i" || return
  done
}

autograd_line() { ratio_line "$AG_JSON" "$AG_TABLE" "$@"; }

autograd_main() {
  local m
  WARMUP=$((ROUNDS / 10 > 0 ? ROUNDS / 10 : 1))
  require_files "$DITASK" "$AUTOGRAD_MODULE"
  HAVE_PYTORCH=0
  have_pytorch && HAVE_PYTORCH=1
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/autograd-*.out
  local with="ditask, ditask on one CPU"
  ((HAVE_PYTORCH)) && with+=", PyTorch"
  mesh_step "autograd: the tutorial's iteration ($with), $ROUNDS rounds, $RUNS_TEXT" autograd_measure
  if ((${#MESH_FAILED[@]})); then
    echo "error: failed: ${MESH_FAILED[*]} (logs in ${DITASK_LOG_DIR#"$DITASK_ROOT"/})" >&2
    return 1
  fi
  declare -A M
  for m in "${!AG[@]}"; do
    # shellcheck disable=SC2086
    M[$m]=$(fmedian ${AG[$m]})
  done
  local floor pinned_floor
  floor=$(awk -v l="${M[local_p50_us]}" -v n="${M[rpcs]}" -v r="${M[rtt_p50_us]}" 'BEGIN { printf "%.1f", l + n * r }')
  pinned_floor=$(awk -v l="${M[pinned_local_p50_us]}" -v n="${M[pinned_rpcs]}" -v r="${M[pinned_rtt_p50_us]}" \
    'BEGIN { printf "%.1f", l + n * r }')
  AG_JSON=$(mktemp) AG_TABLE=$(mktemp)
  autograd_line "iteration p50" us "${M[dist_p50_us]}" "1 ms" 1000 "<= 1"
  autograd_line "iteration p50" us "${M[dist_p50_us]}" "local + calls x rtt" "$floor" "<= 1.5"
  autograd_line "iteration p50" us "${M[dist_p50_us]}" "local (LibTorch) p50" "${M[local_p50_us]}" -
  autograd_line "iteration p99" us "${M[dist_p99_us]}" "iteration p50" "${M[dist_p50_us]}" -
  autograd_line "forward p50" us "${M[forward_p50_us]}" "iteration p50" "${M[dist_p50_us]}" -
  autograd_line "backward p50" us "${M[backward_p50_us]}" "iteration p50" "${M[dist_p50_us]}" -
  autograd_line "optimizer step p50" us "${M[step_p50_us]}" "iteration p50" "${M[dist_p50_us]}" -
  autograd_line "context end p50" us "${M[release_p50_us]}" "iteration p50" "${M[dist_p50_us]}" -
  autograd_line "one CPU: iteration p50" us "${M[pinned_dist_p50_us]}" "local + calls x rtt" "$pinned_floor" "<= 1.5"
  if ((HAVE_PYTORCH)); then
    autograd_line "iteration p50" us "${M[dist_p50_us]}" "PyTorch iteration p50" "${M[pytorch_dist_p50_us]}" -
    autograd_line "iteration p99" us "${M[dist_p99_us]}" "PyTorch iteration p99" "${M[pytorch_dist_p99_us]}" -
    autograd_line "local (LibTorch) p50" us "${M[local_p50_us]}" "PyTorch local p50" "${M[pytorch_local_p50_us]}" -
  fi
  echo
  echo "JSON, one line per figure (ratio = ditask / baseline):"
  cat "$AG_JSON"
  echo
  echo "calls per iteration: ${M[rpcs]}; empty call rtt p50: ${M[rtt_p50_us]} us (one CPU: ${M[pinned_rtt_p50_us]} us)"
  ((HAVE_PYTORCH)) && echo "PyTorch init_rpc: ${M[pytorch_init_rpc_s]} s"
  ((HAVE_PYTORCH)) || echo "PyTorch: not measured (/usr/bin/python3 has no torch; apt-get install python3-torch)"
  echo "the tutorial's iteration, median of $RUNS_TEXT (2 workers, tcp, $(nproc) cores):"
  ratio_header
  cat "$AG_TABLE"
  rm -f "$AG_JSON" "$AG_TABLE"
}
