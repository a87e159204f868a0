#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the Debian packages that `cpack -G DEB` (scripts/package.sh) wrote into a build dir:
#   1. ditask_<version>_<arch>.deb and ditask-dev_<version>_<arch>.deb exist (and
#      python3-ditask_<version>_<arch>.deb where the build has the Python component); their control fields
#      (dpkg-deb -f) name the package, version, architecture, maintainer and description, the
#      Depends of ditask (dpkg-shlibdeps) holds libc6 and libstdc++6, that of ditask-dev holds
#      "ditask (= <version>)" and nlohmann-json3-dev, that of python3-ditask ditask and python3;
#   2. their contents (dpkg-deb -c): each file is in the package it belongs to and in no other,
#      and the files that matter are there (bin/ditask, the versioned runtime with its SONAME, the
#      example plugins and configs; the headers, the .so link, libditask_launcher.a, ditaskConfig.cmake);
#   3. both are extracted into a scratch root (dpkg-deb -x: no root rights, nothing is installed on
#      the machine); <root>/usr/bin/ditask finds its runtime through RUNPATH $ORIGIN/../lib and the
#      example plugins by name, and run.sh --prefix=<root>/usr builds tests/package/project against
#      the root (CMAKE_PREFIX_PATH) and runs its programs and its module with <root>/usr/bin/ditask
#      (and a Python package, with python3-ditask).
# Usage: deb_test.sh [--build-dir=build/release] [--work-dir=<build-dir>/deb-test] [--launcher=ccache]
# The work dir is deleted first and again on success; on failure it is kept for inspection.
# Prints "deb test passed" at the end, or "deb test failed: <why>" and exits 1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source_dir="$(cd "$here/../.." && pwd)"
build_dir="$source_dir/build/release" work_dir="" launcher=""
for arg in "$@"; do
  case "$arg" in
    --build-dir=*) build_dir="${arg#*=}" ;;
    --work-dir=*) work_dir="${arg#*=}" ;;
    --launcher=*) launcher="${arg#*=}" ;;
    -h | --help) sed -n '3,18p' "${BASH_SOURCE[0]}" | cut -c 3-; exit 0 ;;
    *) echo "deb_test.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
build_dir="$(realpath -m "$build_dir")"
work_dir="$(realpath -m "${work_dir:-$build_dir/deb-test}")"

fail() {
  echo "deb test failed: $*"
  [[ ! -d "$work_dir" ]] || echo "(work dir kept: $work_dir)"
  exit 1
}
for tool in dpkg dpkg-deb objdump readelf ldd; do
  command -v "$tool" >/dev/null || fail "$tool is missing (Debian packages dpkg, binutils, libc-bin)"
done

[[ -f "$build_dir/CMakeCache.txt" ]] || fail "$build_dir is not a configured build dir"
version="$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build_dir/CMakeCache.txt")"
[[ -n "$version" ]] || fail "no CMAKE_PROJECT_VERSION in $build_dir/CMakeCache.txt"
arch="$(dpkg --print-architecture)"
deb="$build_dir/ditask_${version}_${arch}.deb"
dev_deb="$build_dir/ditask-dev_${version}_${arch}.deb"
debs=("$deb" "$dev_deb")
py_deb=""
if [[ -f "$build_dir/lib/ditask/python/ditask/__init__.py" ]]; then  # the Python component was built
  py_deb="$build_dir/python3-ditask_${version}_${arch}.deb"
  debs+=("$py_deb")
fi
for f in "${debs[@]}"; do
  [[ -f "$f" ]] || fail "$f is missing (run scripts/package.sh, or cpack -G DEB in $build_dir)"
  echo "-- $(basename "$f") ($(stat -c %s "$f") bytes)"
done

rm -rf "$work_dir"
mkdir -p "$work_dir"

# 1. Control fields.
field() { dpkg-deb -f "$1" "$2"; }
# has_dep "<Depends>" name: name is one of the alternatives of the list (any version constraint).
has_dep() { tr ',|' '\n' <<<"$1" | sed 's/^ *//; s/[ (].*//' | grep -qxF "$2"; }
for f in "${debs[@]}"; do
  name="$(basename "$f")"
  name="${name%%_*}"
  [[ "$(field "$f" Package)" == "$name" ]] || fail "$f: Package is '$(field "$f" Package)', not $name"
  [[ "$(field "$f" Version)" == "$version" ]] || fail "$f: Version is not $version"
  [[ "$(field "$f" Architecture)" == "$arch" ]] || fail "$f: Architecture is not $arch"
  [[ -n "$(field "$f" Maintainer)" ]] || fail "$f: no Maintainer"
  [[ -n "$(field "$f" Description)" ]] || fail "$f: no Description"
done
depends="$(field "$deb" Depends)"
echo "-- ditask Depends: $depends"
[[ -n "$depends" ]] || fail "ditask has no Depends (dpkg-shlibdeps did not run?)"
for dep in libc6 libstdc++6; do
  has_dep "$depends" "$dep" || fail "the Depends of ditask lacks $dep"
done
dev_depends="$(field "$dev_deb" Depends)"
echo "-- ditask-dev Depends: $dev_depends"
grep -qF "ditask (= $version)" <<<"$dev_depends" || fail "the Depends of ditask-dev lacks 'ditask (= $version)'"
has_dep "$dev_depends" nlohmann-json3-dev || fail "the Depends of ditask-dev lacks nlohmann-json3-dev"
if [[ -n "$py_deb" ]]; then
  py_depends="$(field "$py_deb" Depends)"
  echo "-- python3-ditask Depends: $py_depends"
  grep -qF "ditask (= $version)" <<<"$py_depends" || fail "the Depends of python3-ditask lacks 'ditask (= $version)'"
  has_dep "$py_depends" python3 || fail "the Depends of python3-ditask lacks python3"
fi
# dpkg-shlibdeps of a package holding a user module then finds "ditask (= <version>)".
shlibs="$(dpkg-deb -I "$deb" shlibs 2>/dev/null || true)"
grep -qx "libditask_runtime [0-9.]* ditask (= $version)" <<<"$shlibs" ||
  fail "ditask has no DEBIAN/shlibs line for libditask_runtime (got '$shlibs')"

# 2. Contents: paths without the leading "./", directories left out.
contents() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./||' | sort; }
contents "$deb" >"$work_dir/ditask.files"
contents "$dev_deb" >"$work_dir/ditask-dev.files"
# Every file belongs where this says (cmake/DitaskInstall.cmake's components).
runtime_re='^usr/(bin/ditask|lib/libditask_runtime\.so\.[0-9.]+|lib/ditask/plugins/lib[a-z_]+\.so|lib/ditask/plugins/biggraph/[a-z0-9_]+\.tsv\.gz|share/ditask/configs/[^/]+\.json)$'
dev_re='^usr/(include/ditask/.+\.hpp|lib/libditask_runtime\.so|lib/libditask_launcher\.a|lib/cmake/ditask/[^/]+\.cmake)$'
stray="$(grep -Ev "$runtime_re" "$work_dir/ditask.files" || true)"
[[ -z "$stray" ]] || fail "files in ditask that belong elsewhere: $stray"
stray="$(grep -Ev "$dev_re" "$work_dir/ditask-dev.files" || true)"
[[ -z "$stray" ]] || fail "files in ditask-dev that belong elsewhere: $stray"
both="$(comm -12 "$work_dir/ditask.files" "$work_dir/ditask-dev.files")"
[[ -z "$both" ]] || fail "files in both packages: $both"
if [[ -n "$py_deb" ]]; then
  contents "$py_deb" >"$work_dir/python3-ditask.files"
  stray="$(grep -Ev '^usr/lib/python3/dist-packages/ditask/(_ditask\.cpython-[^/]+\.so|[a-z_]+\.py)$' \
    "$work_dir/python3-ditask.files" || true)"
  [[ -z "$stray" ]] || fail "files in python3-ditask that belong elsewhere: $stray"
  grep -q '^usr/lib/python3/dist-packages/ditask/_ditask\.cpython-.*\.so$' "$work_dir/python3-ditask.files" ||
    fail "python3-ditask lacks the extension _ditask"
  both="$(sort "$work_dir/ditask.files" "$work_dir/ditask-dev.files" | comm -12 - "$work_dir/python3-ditask.files")"
  [[ -z "$both" ]] || fail "files in python3-ditask and another package: $both"
fi
need() {
  local list=$1 path
  shift
  for path in "$@"; do
    grep -qx "$path" "$work_dir/$list.files" || fail "$list lacks /$path"
  done
}
need ditask usr/bin/ditask usr/lib/ditask/plugins/libgreeting.so usr/lib/ditask/plugins/libecho_env.so \
  usr/lib/ditask/plugins/libbiggraph.so usr/lib/ditask/plugins/biggraph/debian12_deps.tsv.gz \
  "usr/lib/libditask_runtime\.so\.${version//./\\.}"
grep -q '^usr/share/ditask/configs/.*\.json$' "$work_dir/ditask.files" || fail "ditask has no configs"
[[ -z "$py_deb" ]] || need python3-ditask usr/lib/python3/dist-packages/ditask/__init__.py \
  usr/lib/python3/dist-packages/ditask/_worker.py usr/lib/python3/dist-packages/ditask/task.py
need ditask-dev usr/include/ditask/ditask.hpp usr/include/ditask/launcher/parallel.hpp \
  usr/lib/libditask_runtime.so usr/lib/libditask_launcher.a usr/lib/cmake/ditask/ditaskConfig.cmake \
  usr/lib/cmake/ditask/ditaskConfigVersion.cmake usr/lib/cmake/ditask/ditaskTargets.cmake
echo "-- contents: $(wc -l <"$work_dir/ditask.files") files in ditask, $(wc -l <"$work_dir/ditask-dev.files") in ditask-dev"

# 3. Both packages in a scratch root.
root="$work_dir/root"
mkdir -p "$root"
dpkg-deb -x "$deb" "$root"
dpkg-deb -x "$dev_deb" "$root"
[[ -z "$py_deb" ]] || dpkg-deb -x "$py_deb" "$root"
lib="$root/usr/lib/libditask_runtime.so"
soname="$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')"
[[ "$soname" =~ ^libditask_runtime\.so\.[0-9]+\.[0-9]+$ ]] || fail "the SONAME of the runtime is '$soname'"
[[ -e "$root/usr/lib/$soname" ]] || fail "ditask lacks /usr/lib/$soname (the SONAME link)"
[[ "$(readlink -f "$lib")" == "$(readlink -f "$root/usr/lib/$soname")" ]] ||
  fail "libditask_runtime.so and $soname are not the same library"
echo "-- SONAME $soname"
exe="$root/usr/bin/ditask"
runpath="$(readelf -d "$exe" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p')"
# shellcheck disable=SC2016 # a literal $ORIGIN
[[ "$runpath" == '$ORIGIN/../lib' ]] || fail "bin/ditask has RUNPATH '$runpath', not \$ORIGIN/../lib"
readelf -d "$exe" | grep -qF "Shared library: [$soname]" || fail "bin/ditask does not need $soname"
resolved="$(ldd "$exe" | awk -v so="$soname" '$1 == so {print $3}')"
[[ "$(readlink -f "$resolved")" == "$(readlink -f "$root/usr/lib/$soname")" ]] ||
  fail "bin/ditask loads $soname from '$resolved', not from the package"
echo "-- bin/ditask: RUNPATH $runpath, $soname from the package"

echo "-- running $exe --package greeting --main main --parallel-workers 2"
rc=0
output="$("$exe" --package greeting --main main --parallel-workers 2 2>&1)" || rc=$?
echo "$output"
((rc == 0)) || fail "ditask --package greeting exited with $rc"
for node in 0 1; do
  grep -qx "\[node $node\] hello from node $node of 2" <<<"$output" ||
    fail "ditask --package greeting: no line from node $node"
done

# The user project against <root>/usr, its module run by <root>/usr/bin/ditask.
run=(bash "$here/run.sh" --prefix="$root/usr" --work-dir="$work_dir/project" --build-type=Release
     --build-dir="$build_dir")
[[ -z "$launcher" ]] || run+=(--launcher="$launcher")
rc=0
output="$("${run[@]}" 2>&1)" || rc=$?
echo "$output"
if ((rc != 0)) || ! grep -qx "package test passed" <<<"$output"; then
  fail "the user project against $root/usr failed (run.sh above)"
fi

rm -rf "$work_dir"
echo "deb test passed"
