#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CI job (.ci/run runs this): installs the Debian packages when missing, then
#   1. debug: Debug build with -Werror and every test (build/debug), ctest;
#   1b. the torch component (LibTorch: ditask::torch, the rnn example) is built and tested in the
#      debug stage (label torch) and built, installed and run from a user's project in the release
#      stage; the sanitizer stages leave it out (-DDITASK_TORCH=OFF: LibTorch is not instrumented);
#   1c. the Python component (pybind11: the package ditask, docs/python.md) is built and its pytest
#      suites run in the debug stage (label python); the release stage installs it and runs a
#      user's .py job with the installed ditask; the sanitizer stages leave it out (AUTO: the
#      interpreter is not instrumented);
#   2. asan: ASan+UBSan Debug build of the unit and integration tests (build/asan): the launcher
#      and its workers run instrumented; ctest -L "unit|integration";
#   3. tsan: ThreadSanitizer Debug build of the same tests (build/tsan), ctest -L
#      "unit|integration" with TSAN_OPTIONS=halt_on_error=1: a data race fails the test;
#   4. release: the README's build from a fresh cache, `cmake --preset release` and
#      `cmake --build --preset release` (Release, -O3, no -Werror, no tests: users' builds must not
#      fail on a warning; this stage fails on any warning printed), `cmake --install` into
#      build/install/release and tests/package/run.sh against that install; then
#      scripts/package.sh (cpack -G DEB) and tests/package/deb_test.sh (the .deb files' fields and
#      contents, the user project built against them in a scratch root);
#   5. plain: a plain CMake configure without presets, -DCMAKE_BUILD_TYPE=Release
#      -DBUILD_TESTING=OFF (build/plain-release), built and run once (docs/design.md: why not also
#      RelWithDebInfo).
# `scripts/test.sh release plain` runs only the stages named (default: all five, CI's job).
# Works from any cwd; logs go to build/logs/test/. Exits non-zero on the first failure.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# What the sanitizer builds compile and run.
SANITIZER_TARGETS=(ditask_unit_tests ditask_integration_tests ditask_fuzz_corpus)
SANITIZER_LABELS="unit|integration"
# The three Debug builds keep line tables only (-g1, not -g): enough for every file:line a
# sanitizer report or a crash shows, and 10% less compile time under ASan (measured on a unity
# file: 35 s against 38-39 s). Nobody runs a debugger on CI's trees.
DEBUG_INFO=(-DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1)

# The three Debug builds use Ninja: on 2 cores it built the sanitizer trees 6-10% faster than
# make (its scheduler keeps both cores busy across targets). A tree configured before with
# another generator is configured afresh (CMake refuses to switch in place).
# (ninja-build is installed with the test packages, so this is looked up at configure time.)
configure_debug_tree() {
  local dir=$1 generator="Unix Makefiles"
  shift
  command -v ninja >/dev/null && generator=Ninja
  if [[ -f $dir/CMakeCache.txt ]] && ! grep -qx "CMAKE_GENERATOR:INTERNAL=$generator" "$dir/CMakeCache.txt"; then
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
  cmake -S . -B "$dir" -G "$generator" "$@"
}

STAGES=(debug asan tsan release plain)
if (($#)); then
  for stage in "$@"; do
    [[ " ${STAGES[*]} " == *" $stage "* ]] || {
      echo "usage: scripts/test.sh [${STAGES[*]}]... (unknown stage '$stage')" >&2
      exit 2
    }
  done
  STAGES=("$@")
fi
stage() { [[ " ${STAGES[*]} " == *" $1 "* ]]; }

timer_start "all tests passed"
install_packages "${DITASK_TEST_PACKAGES[@]}"

if stage debug; then
  step "debug: configure (build/debug)" \
    configure_debug_tree build/debug -DCMAKE_BUILD_TYPE=Debug "${DEBUG_INFO[@]}" -DDITASK_WERROR=ON -DBUILD_TESTING=ON
  step "debug: build all (-j$JOBS)" cmake --build build/debug -j "$JOBS"
  STEP_TAIL=150 STEP_NOTE=ctest_note step "debug: ctest" \
    ctest --test-dir build/debug --output-on-failure --timeout 120 -j4
fi

if stage asan; then
  step "asan: configure (build/asan, address,undefined)" \
    configure_debug_tree build/asan -DCMAKE_BUILD_TYPE=Debug "${DEBUG_INFO[@]}" -DDITASK_WERROR=ON -DBUILD_TESTING=ON \
    -DDITASK_SANITIZE=address,undefined -DDITASK_TORCH=OFF
  step "asan: build ${SANITIZER_TARGETS[*]} (-j$JOBS)" \
    cmake --build build/asan -j "$JOBS" --target "${SANITIZER_TARGETS[@]}"
  STEP_TAIL=150 STEP_NOTE=ctest_note step "asan: ctest -L $SANITIZER_LABELS" \
    env ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir build/asan -L "$SANITIZER_LABELS" --output-on-failure --timeout 120 -j3 \
    --no-tests=error
fi

if stage tsan; then
  step "tsan: configure (build/tsan, thread)" \
    configure_debug_tree build/tsan -DCMAKE_BUILD_TYPE=Debug "${DEBUG_INFO[@]}" -DDITASK_WERROR=ON -DBUILD_TESTING=ON \
    -DDITASK_SANITIZE=thread -DDITASK_TORCH=OFF
  step "tsan: build ${SANITIZER_TARGETS[*]} (-j$JOBS)" \
    cmake --build build/tsan -j "$JOBS" --target "${SANITIZER_TARGETS[@]}"
  # The launcher and its workers run instrumented; the first race a process sees fails it.
  STEP_TAIL=150 STEP_NOTE=ctest_note step "tsan: ctest -L $SANITIZER_LABELS" \
    env TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    ctest --test-dir build/tsan -L "$SANITIZER_LABELS" --output-on-failure --timeout 300 -j4 \
    --no-tests=error
fi

# The release and plain stages run the README's command lines as users type them: no -Werror
# (DITASK_WERROR is OFF by default, so a user's other compiler cannot fail their build), but here,
# with Debian 12's GCC, the stage fails on any warning printed (build_without_warnings).
# Runs a build and fails when it printed a compiler warning (one every new user would see), showing
# them, counted. ccache replays a cached TU's warnings, so a cached compile shows them too.
build_without_warnings() {
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  printf '%s\n' "$out"
  ((rc == 0)) || return "$rc"
  if grep -q ': warning: ' <<<"$out"; then
    echo "error: the build printed $(grep -c ': warning: ' <<<"$out") compiler warnings:"
    grep ': warning: ' <<<"$out" | sort | uniq -c | sort -rn | head -n 20
    return 1
  fi
}
# The README's lines start from a new checkout: no cache of an older configure (a DITASK_WERROR=ON
# of the old default, another build type). Object files stay, so a warm tree rebuilds little.
fresh_cache() {
  rm -f "$1/CMakeCache.txt"
}
install_release() {
  rm -rf build/install/release
  cmake --install build/release --prefix build/install/release
}
# One job of the greeting example with a build's own ditask: the build runs, not only links.
run_greeting() {
  "$1/bin/ditask" --package greeting --main main --parallel-workers 2
}
# build/release and build/plain-release compile the same commands in two build dirs: with the
# paths under the repository rewritten relative (also the precompiled header's), ccache serves the
# second build from the first. (No -g there, so the working directory is not part of the hash.)
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$DITASK_ROOT}"
launcher_arg=()
if command -v ccache >/dev/null; then
  launcher_arg=(--launcher="$(command -v ccache)")
fi

if stage release; then
  step "release: fresh cache (rm build/release/CMakeCache.txt)" fresh_cache build/release
  step "release: cmake --preset release" cmake --preset release
  step "release: cmake --build --preset release -j $JOBS (no warnings)" \
    build_without_warnings cmake --build --preset release -j "$JOBS"
  step "release: cmake --install build/release --prefix build/install/release" install_release
  step "release: find_package test (tests/package/run.sh --prefix=build/install/release)" \
    bash tests/package/run.sh --prefix=build/install/release --work-dir=build/package-test/release \
    --build-dir=build/release --build-type=Release "${launcher_arg[@]}"
  step "release: scripts/package.sh (cpack -G DEB in build/release)" scripts/package.sh
  step "release: tests/package/deb_test.sh (build/release/*.deb)" \
    bash tests/package/deb_test.sh --build-dir=build/release "${launcher_arg[@]}"
fi

if stage plain; then
  dir=build/plain-release
  step "plain Release: fresh cache (rm $dir/CMakeCache.txt)" fresh_cache "$dir"
  step "plain Release: cmake -S . -B $dir -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF" \
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
  step "plain Release: cmake --build $dir -j $JOBS (no warnings)" \
    build_without_warnings cmake --build "$dir" -j "$JOBS"
  step "plain Release: $dir/bin/ditask --package greeting --parallel-workers 2" run_greeting "$dir"
fi

# One closing line in the plain "N passed, N failed" form that CI reads, summed over the ctest
# runs (the debug, asan and tsan stages; the release stage's package tests print their own result).
# CTest counts a skipped test among the passed ones: those are taken out (and listed below).
passed=0
for log in "$DITASK_LOG_DIR"/*ctest*.log; do
  [[ -f "$log" ]] || continue
  n=$(grep -Eo 'tests passed, 0 tests failed out of [0-9]+' "$log" | tail -n 1 | awk '{print $NF}')
  skipped_here=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)
  passed=$((passed + ${n:-0} - ${skipped_here:-0}))
done
# A green run says what it did not cover: the tests skipped where this machine lacks what they
# need (a namespace, a Slurm daemon, root), with the reason each printed.
skipped=""
for stage in debug asan tsan; do
  log=$(ls "$DITASK_LOG_DIR"/[0-9][0-9]-"$stage"-ctest*.log 2>/dev/null | tail -n 1 || true)
  if [[ -n "$log" ]]; then
    skipped+=$(skipped_tests "$stage" "build/$stage" "$log")$'\n'
  fi
done
skipped=$(grep -v '^$' <<<"$skipped" || true)
_timer_report
trap - EXIT
if [[ -n "$skipped" ]]; then
  echo "skipped here ($(wc -l <<<"$skipped") tests; each needs what this machine lacks):"
  echo "$skipped"
fi
echo "ctest: $passed passed, 0 failed"
