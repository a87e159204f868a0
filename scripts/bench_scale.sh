# SPDX-License-Identifier: MIT
# The scale mode of scripts/bench.sh (sourced by it, after bench_mesh.sh, whose helpers it uses):
# N workers on this machine, for each N of --workers (default "32 128 512") and each topology of
# --topologies (default "star-relay mesh": `--topology star --relay`, and the full mesh), R runs
# each, medians reported (bench_mesh scale):
#   ready      from the start of the ditask command until the last worker's start() returned;
#   broadcast  from the highest node's emit of one event until the last of the other N-1 has it;
#   rss, fds   a worker's VmRSS and open descriptors once the event reached it: the median
#              worker's and the largest (a star's hub);
#   floor      the same N workers with `--topology alone` (no connection at all): what starting
#              N processes costs here.
# Target: ready <= 5 s at N = 512 (any topology; the note under the table says which met it).
# shellcheck shell=bash disable=SC2034

declare -A SCALE

# Flags of a topology name.
scale_flags() {
  case $1 in
    star-relay) echo "--topology star --relay" ;;
    mesh) echo "--topology mesh" ;;
    alone) echo "--topology alone" ;;
  esac
}

# One run of N workers with topology T: appends ready_s, broadcast_ms, rss (median, max) and
# fds (median, max) to SCALE[<T>,<N>,<figure>].
scale_run() {
  local t=$1 n=$2 i=$3 out start lines ready broadcast flags rss fds rss_med rss_max fds_med fds_max
  out="$DITASK_LOG_DIR/scale-$t-$n-$i.out"
  read -r -a flags <<<"$(scale_flags "$t")"
  start=${EPOCHREALTIME/[.,]/}
  run_to "$out" "$DITASK" --package "$MESH_MODULE" --main scale --parallel-workers "$n" "${flags[@]}" \
    --timeout "$TIMEOUT" -- "timeout_s=$((TIMEOUT > 20 ? TIMEOUT - 10 : TIMEOUT))" || return
  lines=$(grep -c -F "bench_mesh scale " "$out")
  if ((lines != n)); then
    echo "error: expected $n 'bench_mesh scale' lines, got $lines:"
    tail -n 20 "$out"
    return 1
  fi
  # Ready (last start() - command start) and broadcast (last arrival - emit); then the median
  # and largest RSS and fds (mawk has no sort of its own: sort -g through fmedian and fmax).
  read -r ready broadcast < <(grep -F "bench_mesh scale " "$out" | awk -v s="$start" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      if (v["ready_us"] > r) r = v["ready_us"]; if (v["wave_us"] > w) w = v["wave_us"]; sent = v["sent_us"] }
    END { printf "%.3f %.2f\n", (r - s) / 1e6, (w - sent) / 1e3 }')
  mapfile -t rss < <(grep -F "bench_mesh scale " "$out" | grep -Eo 'vmrss_kb=[0-9]+' | cut -d= -f2)
  mapfile -t fds < <(grep -F "bench_mesh scale " "$out" | grep -Eo 'fds=[0-9]+' | cut -d= -f2)
  rss_med=$(fmedian "${rss[@]}") rss_max=$(fmax "${rss[@]}")
  fds_med=$(fmedian "${fds[@]}") fds_max=$(fmax "${fds[@]}")
  SCALE[$t,$n,ready]+=" $ready"
  SCALE[$t,$n,broadcast]+=" $broadcast"
  SCALE[$t,$n,rss_med]+=" $rss_med"
  SCALE[$t,$n,rss_max]+=" $rss_max"
  SCALE[$t,$n,fds_med]+=" $fds_med"
  SCALE[$t,$n,fds_max]+=" $fds_max"
}

scale_measure() {
  local t=$1 n=$2 i
  for ((i = 0; i < RUNS; i++)); do
    scale_run "$t" "$n" "$i" || return
  done
}

scale_main() {
  local t n k json
  require_files "$DITASK" "$MESH_MODULE"
  mkdir -p "$DITASK_LOG_DIR"
  rm -f "$DITASK_LOG_DIR"/scale-*.out
  for n in "${WORKERS[@]}"; do
    for t in alone "${TOPOLOGIES[@]}"; do
      mesh_step "scale: $n workers, $t, $RUNS_TEXT" scale_measure "$t" "$n"
    done
  done
  if ((${#MESH_FAILED[@]})); then
    echo "error: failed: ${MESH_FAILED[*]} (logs in ${DITASK_LOG_DIR#"$DITASK_ROOT"/})" >&2
    return 1
  fi
  echo
  echo "JSON, one line per topology and N (medians of $RUNS_TEXT; ready in s, broadcast in ms, rss in kB):"
  for n in "${WORKERS[@]}"; do
    for t in alone "${TOPOLOGIES[@]}"; do
      json="{\"figure\":\"scale\",\"topology\":\"$t\",\"n\":$n"
      for k in ready broadcast rss_med rss_max fds_med fds_max; do
        # shellcheck disable=SC2086
        json+=",\"$k\":$(fmedian ${SCALE[$t,$n,$k]})"
      done
      if ((n == 512)) && [[ $t != alone ]]; then
        # shellcheck disable=SC2086
        json+=",\"target\":\"ready <= 5 s\",\"met\":$(awk -v r="$(fmedian ${SCALE[$t,$n,ready]})" 'BEGIN { print (r <= 5) ? "true" : "false" }')"
      fi
      echo "$json}"
    done
  done
  echo
  echo "ditask at scale on one machine, median of $RUNS_TEXT ($(nproc) cores; alone: no connections, the floor):"
  printf '%-11s %5s %9s %13s %14s %14s\n' topology N "ready s" "broadcast ms" "rss kB med/max" "fds med/max"
  for n in "${WORKERS[@]}"; do
    for t in alone "${TOPOLOGIES[@]}"; do
      # shellcheck disable=SC2086
      printf '%-11s %5s %9s %13s %14s %14s\n' "$t" "$n" "$(fmedian ${SCALE[$t,$n,ready]})" \
        "$(fmedian ${SCALE[$t,$n,broadcast]})" \
        "$(fmedian ${SCALE[$t,$n,rss_med]})/$(fmedian ${SCALE[$t,$n,rss_max]})" \
        "$(fmedian ${SCALE[$t,$n,fds_med]})/$(fmedian ${SCALE[$t,$n,fds_max]})"
    done
  done
  echo "target: ready <= 5 s at N=512 (alone is the floor, not a candidate)"
}
