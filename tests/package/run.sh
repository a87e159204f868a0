#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs project/ (a user project: find_package(ditask), a program, a module and a
# self-supervising program) against an installed ditask, then runs the module with the installed
# bin/ditask. Either it installs a build tree into <work-dir>/prefix first (CTest's way,
# tests/package/CMakeLists.txt gives the arguments), or it uses an install that exists already:
#   run.sh --build-dir=DIR --work-dir=DIR [options]     install DIR, then test that install
#   run.sh --prefix=DIR --work-dir=DIR [options]        test the install in DIR as it is
#                                                       (scripts/test.sh: `cmake --install
#                                                       build/release --prefix build/install/release`)
# options: [--cmake=cmake] [--generator=G] [--cxx=g++] [--launcher=ccache] [--build-type=Debug]
#          [--sanitize=address,undefined]; with --prefix, --build-dir=DIR only names the build tree
#          that the installed CMake files must not refer to.
# The work dir is deleted first and again on success; on failure it is kept for inspection. A
# --prefix install is never modified.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build_dir="" work_dir="" prefix="" cmake=cmake generator="" cxx="" launcher="" build_type=Debug
sanitize=""
for arg in "$@"; do
  case "$arg" in
    --build-dir=*) build_dir="${arg#*=}" ;;
    --work-dir=*) work_dir="${arg#*=}" ;;
    --prefix=*) prefix="${arg#*=}" ;;
    --cmake=*) cmake="${arg#*=}" ;;
    --generator=*) generator="${arg#*=}" ;;
    --cxx=*) cxx="${arg#*=}" ;;
    --launcher=*) launcher="${arg#*=}" ;;
    --build-type=*) build_type="${arg#*=}" ;;
    --sanitize=*) sanitize="${arg#*=}" ;;
    *) echo "run.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
if [[ -z "$work_dir" || (-z "$build_dir" && -z "$prefix") ]]; then
  echo "run.sh: --work-dir and one of --build-dir or --prefix are required" >&2
  exit 2
fi
# Absolute paths: the project is configured and its programs run from other directories.
work_dir="$(realpath -m "$work_dir")"
[[ -z "$build_dir" ]] || build_dir="$(realpath -m "$build_dir")"
if [[ -n "$prefix" ]]; then
  [[ -d "$prefix" ]] || { echo "run.sh: --prefix '$prefix' is not a directory" >&2; exit 2; }
  prefix="$(realpath "$prefix")"
fi

fail() {
  echo "package test failed: $*"
  echo "(work dir kept: $work_dir)"
  exit 1
}
# Runs a command, showing its output only when it fails.
quiet() {
  local log="$work_dir/last-command.log"
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    fail "command failed: $*"
  fi
}

project_build="$work_dir/project-build"
rm -rf "$work_dir"
mkdir -p "$work_dir"

if [[ -z "$prefix" ]]; then
  prefix="$work_dir/prefix"
  # DESTDIR would send the install elsewhere.
  unset DESTDIR
  echo "-- installing $build_dir into $prefix"
  quiet "$cmake" --install "$build_dir" --prefix "$prefix" --config "$build_type"
else
  echo "-- using the install in $prefix"
fi
[[ -f "$prefix/include/ditask/ditask.hpp" ]] || fail "include/ditask/ditask.hpp was not installed"
config="$(find "$prefix" -name ditaskConfig.cmake -print -quit)"
[[ -n "$config" ]] || fail "ditaskConfig.cmake was not installed"
# An installed package must not point back into the source or build tree.
source_dir="$(cd "$here/../.." && pwd)"
tree_dirs=(-e "$source_dir/")
[[ -z "$build_dir" ]] || tree_dirs+=(-e "$build_dir")
if grep -rlF "${tree_dirs[@]}" "$(dirname "$config")"; then
  fail "installed CMake files above refer to the source or build tree"
fi

configure=("$cmake" -S "$here/project" -B "$project_build" -DCMAKE_BUILD_TYPE="$build_type"
           -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
[[ -n "$generator" ]] && configure+=(-G "$generator")
[[ -n "$cxx" ]] && configure+=(-DCMAKE_CXX_COMPILER="$cxx")
[[ -n "$launcher" ]] && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
if [[ -n "$sanitize" ]]; then
  # The runtime was built with sanitizers; its users must link the same runtime libraries.
  configure+=(-DCMAKE_CXX_FLAGS="-fsanitize=$sanitize -fno-omit-frame-pointer"
              -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitize"
              -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=$sanitize")
fi
echo "-- configuring $here/project"
quiet "${configure[@]}"
found="$(grep '^ditask_DIR:' "$project_build/CMakeCache.txt" | cut -d= -f2-)"
[[ "$found" == "$prefix"/* ]] || fail "find_package(ditask) found '$found', not the package in $prefix"
echo "-- building"
quiet "$cmake" --build "$project_build" --config "$build_type"

exe="$(find "$project_build" -type f -name package_user -perm -u+x -print -quit)"
[[ -n "$exe" ]] || fail "the package_user executable was not built"
module="$(find "$project_build" -type f -name 'package_module.so' -print -quit)"
[[ -n "$module" ]] || fail "the package_module module was not built"
# DITASK_MAIN(main) must stay visible although the module is built with hidden visibility.
for sym in ditask_entry_main ditask_entry_abi_main; do
  nm -D --defined-only "$module" | grep -qw "$sym" || fail "$module does not export $sym"
done
echo "-- running $exe"
rc=0
output="$("$exe" 2>&1)" || rc=$?
echo "$output"
((rc == 0)) || fail "package_user exited with $rc"
grep -q "^package_user: ok" <<<"$output" || fail "package_user did not print 'package_user: ok'"

runner="$(find "$project_build" -type f -name runner_user -perm -u+x -print -quit)"
[[ -n "$runner" ]] || fail "the runner_user executable was not built"
echo "-- running $runner ok"
rc=0
output="$("$runner" ok 2>&1)" || rc=$?
echo "$output"
((rc == 0)) || fail "runner_user ok exited with $rc"
for node in 0 1 2; do
  grep -q "^\[node $node\] runner_user: node $node of 3 active=1 learner=1 args=1$" <<<"$output" ||
    fail "runner_user ok: no line from node $node"
done
echo "-- running $runner fail"
rc=0
output="$("$runner" fail 2>&1)" || rc=$?
echo "$output"
((rc == 1)) || fail "runner_user fail exited with $rc, expected 1"
grep -q "runner_user: node 1 gives up" <<<"$output" || fail "runner_user fail: the failure text is missing"

# The installed launcher runs the module: it finds its runtime through RUNPATH $ORIGIN/../lib.
ditask="$prefix/bin/ditask"
[[ -x "$ditask" ]] || fail "bin/ditask was not installed"
echo "-- running $ditask --package $module --main main --parallel-workers 2 -- one"
rc=0
output="$("$ditask" --package "$module" --main main --parallel-workers 2 -- one 2>&1)" || rc=$?
echo "$output"
((rc == 0)) || fail "ditask --package package_module.so exited with $rc"
for node in 0 1; do
  grep -q "^\[node $node\] package_module: node $node of 2 got 42$" <<<"$output" ||
    fail "ditask --package package_module.so: no line from node $node"
done

# The torch component, where the install has it: a module built against ditask::torch trains
# across two workers of the installed launcher (distributed backward, gradient checked).
torch_module="$(find "$project_build" -type f -name 'torch_module.so' -print -quit)"
if [[ -f "$prefix/lib/cmake/ditask/ditaskTorchTargets.cmake" ]]; then
  [[ -n "$torch_module" ]] || fail "the install has the torch component, but torch_module was not built"
  echo "-- running $ditask --package $torch_module --parallel-workers 2"
  rc=0
  output="$("$ditask" --package "$torch_module" --parallel-workers 2 2>&1)" || rc=$?
  echo "$output"
  ((rc == 0)) || fail "ditask --package torch_module.so exited with $rc"
  grep -q "^\[node 0\] torch_module: gradient 2x ok, contexts left 0$" <<<"$output" ||
    fail "ditask --package torch_module.so: no 'gradient 2x ok' line from node 0"
else
  echo "-- no torch component in this install: torch_module not run"
fi

# The Python component, where the install has it: the installed bin/ditask runs a user's Python
# package with the installed package ditask (it puts it on the workers' PYTHONPATH itself).
py_init="$(find "$prefix/lib" -path '*/dist-packages/ditask/__init__.py' -print -quit 2>/dev/null || true)"
if [[ -n "$py_init" ]]; then
  cat >"$work_dir/user_job.py" <<'PY'
from ditask import task


def main():
    with task.start():
        if task.router.node_id == 0:
            print("user_job: got %s" % (task.wait_for("greeting", timeout=60)[0][0],), flush=True)
        else:
            task.emit("greeting", "Hi")
PY
  echo "-- running $ditask --package $work_dir/user_job.py --main user_job.main --parallel-workers 2"
  rc=0
  output="$(env -u PYTHONPATH "$ditask" --package "$work_dir/user_job.py" --main user_job.main --parallel-workers 2 2>&1)" || rc=$?
  echo "$output"
  ((rc == 0)) || fail "ditask --package user_job.py exited with $rc"
  grep -q "^\[node 0\] user_job: got Hi$" <<<"$output" || fail "ditask --package user_job.py: no 'got Hi' line from node 0"
else
  echo "-- no Python component in this install: user_job.py not run"
fi

rm -rf "$work_dir"
echo "package test passed"
