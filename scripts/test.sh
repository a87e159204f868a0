#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CI job (.ci/run runs this): installs the Debian packages when missing, then
#   1. Debug build with -Werror and every test (build/debug), ctest;
#   2. ASan+UBSan Debug build of the unit and integration tests (build/asan): the launcher and
#      its workers run instrumented; ctest -L "unit|integration".
# Works from any cwd; logs go to build/logs/test/. Exits non-zero on the first failure.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# What the sanitizer build compiles and runs (STYLE §12 adds the mesh integration tests here
# once they exist).
ASAN_TARGETS=(ditask_unit_tests ditask_integration_tests ditask_fuzz_corpus)
ASAN_LABELS="unit|integration"

timer_start "all tests passed"
install_packages

step "debug: configure (build/debug)" \
  cmake -S . -B build/debug -DCMAKE_BUILD_TYPE=Debug -DDITASK_WERROR=ON -DBUILD_TESTING=ON
step "debug: build all (-j$JOBS)" cmake --build build/debug -j "$JOBS"
STEP_TAIL=150 STEP_NOTE=ctest_note step "debug: ctest" \
  ctest --test-dir build/debug --output-on-failure --timeout 120 -j2

step "asan: configure (build/asan, address,undefined)" \
  cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DDITASK_WERROR=ON -DBUILD_TESTING=ON \
  -DDITASK_SANITIZE=address,undefined
step "asan: build ${ASAN_TARGETS[*]} (-j$JOBS)" \
  cmake --build build/asan -j "$JOBS" --target "${ASAN_TARGETS[@]}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
STEP_TAIL=150 STEP_NOTE=ctest_note step "asan: ctest -L $ASAN_LABELS" \
  ctest --test-dir build/asan -L "$ASAN_LABELS" --output-on-failure --timeout 120 -j2 \
  --no-tests=error

# One closing line in the plain "N passed, N failed" form that CI reads, summed over both runs.
passed=0
for log in "$DITASK_LOG_DIR"/*ctest*.log; do
  n=$(grep -Eo 'tests passed, 0 tests failed out of [0-9]+' "$log" | tail -n 1 | awk '{print $NF}')
  passed=$((passed + ${n:-0}))
done
_timer_report
trap - EXIT
echo "ctest: $passed passed, 0 failed"
