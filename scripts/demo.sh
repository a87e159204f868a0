#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages when missing, builds the Release demo (build/release) and runs it:
# a ditask pipeline (events, handlers, middleware) in one process. Works from any cwd.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

timer_start "demo finished"
install_packages

# -Werror is for CI (scripts/test.sh); a new compiler warning must not stop a demo.
step "release: configure (build/release)" \
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DDITASK_WERROR=OFF
step "release: build pipeline_demo (-j$JOBS)" \
  cmake --build build/release -j "$JOBS" --target pipeline_demo
step_show "run build/release/bin/pipeline_demo" build/release/bin/pipeline_demo "$@"
