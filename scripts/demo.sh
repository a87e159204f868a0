#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages when missing, builds the Release demo (build/release) and runs it:
#   1. ditask starting 4 workers of the greeting module (plugins/greeting), each printing a line
#      that ditask tags with its node id;
#   2. pipeline_demo: a ditask pipeline (events, handlers, middleware) in one process.
# Arguments go to pipeline_demo. Works from any cwd.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

timer_start "demo finished"
install_packages

# -Werror is for CI (scripts/test.sh); a new compiler warning must not stop a demo.
# BUILD_TESTING=ON as in scripts/bench.sh, which shares build/release: switching between the two
# scripts then never reconfigures. Only the targets named below are built.
step "release: configure (build/release)" \
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DDITASK_WERROR=OFF
step "release: build ditask, greeting, pipeline_demo (-j$JOBS)" \
  cmake --build build/release -j "$JOBS" --target ditask greeting pipeline_demo
step_show "run ditask --package greeting --main main --parallel-workers 4" \
  build/release/bin/ditask --package greeting --main main --parallel-workers 4
# The mesh: node 0 listens for "greeting", nodes 1 and 2 emit "Hi" (DESIGN.md's example).
step_show "run ditask --package greeting --main main_entry --parallel-workers 3" \
  build/release/bin/ditask --package greeting --main main_entry --parallel-workers 3
step_show "run build/release/bin/pipeline_demo" build/release/bin/pipeline_demo "$@"
