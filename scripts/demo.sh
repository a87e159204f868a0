#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages when missing, builds Release (build/release) and runs the main
# example job: REINFORCE on CartPole-v1 with a learner and 3 collectors (plugins/cartpole), every
# worker's lines tagged with its node id, until the learner prints "Solved!" and ends the job.
# Arguments go to the job's module (e.g. `scripts/demo.sh seed=3`). Works from any cwd.
# `scripts/demo.sh rnn [args]` instead installs LibTorch (libtorch-dev, about 120 MiB) and runs the
# PyTorch RPC tutorial's distributed RNN (torch/examples/rnn; docs/autograd.md): a trainer and a
# parameter server, distributed autograd and the distributed optimizer.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

timer_start "demo finished"
if [[ "${1:-}" == "rnn" ]]; then
  shift
  install_packages "${DITASK_TORCH_PACKAGES[@]}"
  step "release: configure (build/release, the torch component on)" \
    cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DDITASK_WERROR=OFF -DDITASK_TORCH=ON
  step "release: build ditask and the rnn example (-j$JOBS)" cmake --build build/release -j "$JOBS" --target ditask rnn
  step_show "run ditask --package rnn --parallel-workers 2 --roles trainer:0,ps:1" \
    build/release/bin/ditask --package rnn --parallel-workers 2 --roles trainer:0,ps:1 -- "$@"
  exit 0
fi
install_packages

# -Werror is for CI (scripts/test.sh); a new compiler warning must not stop a demo.
# BUILD_TESTING=ON as in scripts/bench.sh, which shares build/release: switching between the two
# scripts then never reconfigures. Only the targets named below are built.
step "release: configure (build/release)" \
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DDITASK_WERROR=OFF
# The main job's module and the other examples the README runs after the demo.
step "release: build ditask and the example modules (-j$JOBS)" \
  cmake --build build/release -j "$JOBS" --target ditask cartpole dqn rpc_cartpole greeting echo_env faults
step_show "run ditask --package cartpole --main main --parallel-workers 4 --roles learner:0,collector:1-" \
  build/release/bin/ditask --package cartpole --main main --parallel-workers 4 \
  --roles learner:0,collector:1- -- "$@"
