#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fuzzes the mesh decoders (frame stream, hello, event arguments, auth proof) with libFuzzer:
# configures build/fuzz with clang and DITASK_FUZZ=ON, builds ditask_frame_fuzz, and runs it for
# ${1:-60} seconds on a copy of tests/fuzz/corpus (the seeds stay untouched).
#   scripts/fuzz.sh [seconds]
# Needs clang++ and its libFuzzer runtime (Debian: clang-14 libclang-rt-14-dev). A crash input is
# saved in build/fuzz/artifacts/; replay it in any build with
#   build/<dir>/bin/ditask_fuzz_corpus build/fuzz/artifacts/crash-...
# and, once fixed, keep it as a seed in tests/fuzz/corpus/ (via tests/fuzz/make_corpus.py).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build="$root/build/fuzz"
corpus="$build/corpus"
artifacts="$build/artifacts"

CXX="${CXX:-clang++}" cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBUILD_TESTING=ON -DDITASK_FUZZ=ON -DDITASK_WERROR=OFF -DDITASK_PCH=OFF >/dev/null
cmake --build "$build" --target ditask_frame_fuzz -j "$(nproc 2>/dev/null || echo 2)"

rm -rf "$corpus"
mkdir -p "$corpus" "$artifacts"
cp "$root"/tests/fuzz/corpus/* "$corpus"/

echo "==> fuzzing for $seconds s (log: $build/fuzz.log)"
status=0
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
  "$build/bin/ditask_frame_fuzz" "$corpus" -max_total_time="$seconds" -max_len=4096 \
  -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" \
  >"$build/fuzz.log" 2>&1 || status=$?

grep -E '^#[0-9]+ +DONE|^stat::|^Done ' "$build/fuzz.log" || true
if ((status != 0)); then
  tail -n 60 "$build/fuzz.log"
  echo "fuzz: FAILED (exit $status); inputs in $artifacts:"
  ls -l "$artifacts"
  exit "$status"
fi
echo "fuzz: no crash in $seconds s; corpus grew from $(ls "$root/tests/fuzz/corpus" | wc -l) to $(ls "$corpus" | wc -l) inputs"
