# SPDX-License-Identifier: MIT
# Shared helpers for scripts/demo.sh and scripts/test.sh. Source it; it is not a program.
#
#   step "description" cmd args...        run cmd quietly (output to a log), print one line:
#                                          ==> description ... ok (3.2 s)
#   step_show "description" cmd args...   the same, but cmd's output is shown as it runs
#   install_packages                      apt-get DITASK_PACKAGES when any of them is missing
#
# Sourcing it sets strict mode and changes to the repository root, so callers work from any cwd.
# shellcheck shell=bash

set -euo pipefail

DITASK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$DITASK_ROOT"

# Every step of scripts/X.sh writes build/logs/X/NN-<step>.log (the previous run's are removed).
DITASK_LOG_DIR="${DITASK_LOG_DIR:-$DITASK_ROOT/build/logs/$(basename "$0" .sh)}"
# Lines of a failed step's log to print (ctest output is longer).
STEP_TAIL="${STEP_TAIL:-40}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

# The Debian 12 packages of the core build; the README's one-liner lists the same. dpkg-dev
# (dpkg-shlibdeps) and file are for `cpack -G DEB` (scripts/package.sh).
DITASK_PACKAGES=(g++ cmake make libboost1.81-dev nlohmann-json3-dev libcli11-dev catch2 ccache
                 pkg-config libssl-dev libeigen3-dev libhiredis-dev dpkg-dev file)

# What the benchmarks need besides: ZeroMQ, the mesh's second baseline (tests/bench/zmq_mesh_bench.cpp),
# redis-server for `scripts/bench.sh redis`, and gRPC with its protoc plugin for the rpc
# benchmark's gRPC figures (tests/bench/grpc_calls_bench.cpp).
DITASK_BENCH_PACKAGES=(libzmq3-dev redis-server libgrpc++-dev protobuf-compiler-grpc)

# LibTorch for the torch component (ditask::torch, the rnn example; docs/autograd.md): about
# 120 MiB and 160 packages, so only scripts/test.sh and `scripts/demo.sh rnn` install it.
DITASK_TORCH_PACKAGES=(libtorch-dev)

# The Python component (python/, docs/python.md): pybind11 and the interpreter's headers to build
# it, NumPy and pytest for its tests. Like LibTorch, only scripts/test.sh installs them.
DITASK_PYTHON_PACKAGES=(pybind11-dev python3-dev python3-numpy python3-pytest)

# What only the tests need besides: a private Slurm (tests/slurm), network namespaces
# (tests/netns), Ninja (scripts/test.sh's Debug builds), tmux (the status line's terminal test), python3-protobuf (the TensorBoard files' reader), redis-server (each Redis test starts its
# own), the benchmarks' programs, which CI builds and smoke-runs, and LibTorch.
# shellcheck disable=SC2034 # read by scripts/test.sh, which sources this file
DITASK_TEST_PACKAGES=(slurm-wlm munge iproute2 ninja-build tmux python3-protobuf "${DITASK_BENCH_PACKAGES[@]}"
                      "${DITASK_TORCH_PACKAGES[@]}" "${DITASK_PYTHON_PACKAGES[@]}")

# CMake uses ccache by itself when it is installed (CMakeLists.txt). These let ccache cache
# translation units that use the precompiled headers instead of passing them through.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"

_step_count=0

# Microseconds since the epoch (bash 5 has EPOCHREALTIME; no `date` fork).
_now_us() {
  echo "${EPOCHREALTIME/[.,]/}"
}

# "12.3 s" or "2 min 05 s" from a microsecond difference.
_fmt_duration() {
  local us=$1 tenths=$((($1 + 50000) / 100000))
  if ((us >= 60000000)); then
    printf '%d min %02d s' $((us / 60000000)) $(((us / 1000000) % 60))
  else
    printf '%d.%d s' $((tenths / 10)) $((tenths % 10))
  fi
}

_slug() {
  local s="${1,,}"
  s="${s//[^a-z0-9]/-}"
  while [[ "$s" == *--* ]]; do s="${s//--/-}"; done
  s="${s#-}"
  s="${s:0:100}" # a file name has at most 255 bytes; a long package list must not reach it
  echo "${s%-}"
}

# _run_step show|quiet "description" cmd...
_run_step() {
  local mode=$1 desc=$2
  shift 2
  if ((_step_count == 0)); then
    mkdir -p "$DITASK_LOG_DIR"
    rm -f "$DITASK_LOG_DIR"/[0-9][0-9]-*.log
  fi
  _step_count=$((_step_count + 1))
  local log
  log="$DITASK_LOG_DIR/$(printf '%02d' "$_step_count")-$(_slug "$desc").log"
  local start rc=0
  start=$(_now_us)
  if [[ $mode == show ]]; then
    echo "==> $desc"
    # pipefail: rc is the command's status, not tee's.
    "$@" 2>&1 | tee "$log" || rc=$?
  elif [[ -t 1 ]]; then
    # On a terminal, show what is running; the result completes the same line.
    printf '==> %s ... ' "$desc"
    "$@" >"$log" 2>&1 </dev/null || rc=$?
  else
    "$@" >"$log" 2>&1 </dev/null || rc=$?
  fi
  local took
  took=$(_fmt_duration $(($(_now_us) - start)))
  local head=""
  [[ $mode == show || ! -t 1 ]] && head="==> $desc ... "
  if ((rc == 0)); then
    local note=""
    if [[ -n "${STEP_NOTE:-}" ]]; then
      note="$("$STEP_NOTE" "$log" 2>/dev/null || true)"
      [[ -z "$note" ]] || note="; $note"
    fi
    echo "${head}ok (${took}${note})"
    return 0
  fi
  echo "${head}FAILED (${took}, exit ${rc})"
  if [[ $mode == quiet ]]; then
    # A compiler's first error is the one to read; the tail is often its template backtrace.
    if grep -qE ': (fatal )?error: |undefined reference to' "$log"; then
      echo "---- first errors in ${log#"$DITASK_ROOT"/} ----"
      grep -m 5 -E ': (fatal )?error: |undefined reference to' "$log" | cut -c 1-400
    fi
    echo "---- last ${STEP_TAIL} lines of ${log#"$DITASK_ROOT"/} ----"
    tail -n "$STEP_TAIL" "$log"
    echo "---- end of log (full log: $log) ----"
  fi
  exit "$rc"
}

step() { _run_step quiet "$@"; }
step_show() { _run_step show "$@"; }

# For STEP_NOTE: "57 tests passed" from a ctest log.
ctest_note() {
  local line
  line=$(grep -Eo 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -n 1)
  if [[ -n "$line" ]]; then
    echo "${line##* } tests passed"
  fi
}

# Prints "  STAGE: TEST: REASON" for each test a ctest run skipped: the names from its console
# log CTEST_LOG ("The following tests did not run"), each reason the first line of the test's own
# output (BUILD_DIR/Testing/Temporary/LastTest.log) that says SKIPPED or "[ditask test skipped]".
skipped_tests() {  # skipped_tests STAGE BUILD_DIR CTEST_LOG
  local stage=$1 dir=$2 log=$3 name reason
  [[ -f $log ]] || return 0
  sed -n '/The following tests did not run:/,/^$/p' "$log" | sed -nE 's/^[[:space:]]+[0-9]+ - (.*) \(Skipped\)$/\1/p' |
    while IFS= read -r name; do
      reason=$(awk -v name="$name" '
        /^[0-9]+\/[0-9]+ Test: / { line = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", line); inside = (line == name); out = 0; next }
        inside && /^Output:$/ { out = 1; next }
        /^<end of output>$/ { out = 0 }
        inside && out && /SKIPPED|\[ditask test skipped\]/ { sub(/^.*(SKIPPED:?|\[ditask test skipped\]) */, ""); print; exit }
      ' "$dir/Testing/Temporary/LastTest.log" 2>/dev/null)
      echo "  $stage: $name: ${reason:-no reason printed}"
    done
}

_apt_install() {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# Installs DITASK_PACKAGES (and the arguments, e.g. "${DITASK_TEST_PACKAGES[@]}") when any is
# missing; quiet when none is.
install_packages() {
  local wanted=("${DITASK_PACKAGES[@]}" "$@")
  if ! command -v dpkg-query >/dev/null; then
    echo "==> install packages ... skipped (no dpkg: install the equivalents of ${wanted[*]})"
    return 0
  fi
  local p missing=()
  for p in "${wanted[@]}"; do
    if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
      missing+=("$p")
    fi
  done
  ((${#missing[@]})) || return 0
  if ((EUID != 0)); then
    echo "error: missing Debian packages: ${missing[*]}" >&2
    echo "hint: run this script as root (it installs them), or first run:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  step "install packages (${missing[*]})" _apt_install "${missing[@]}"
}

# timer_start "all tests passed": starts the clock; when the script exits, one last line gives
# the outcome and the total time.
timer_start() {
  _done_message="${1:-done}"
  _total_start=$(_now_us)
  trap _timer_report EXIT
}
_timer_report() {
  local rc=$? took
  took=$(_fmt_duration $(($(_now_us) - _total_start)))
  if ((rc == 0)); then
    echo "==> ${_done_message}, total ${took}"
  else
    echo "==> FAILED (exit ${rc}) after ${took}" >&2
  fi
}
