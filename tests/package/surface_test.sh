#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The SDK's surface: the headers an install puts under include/ and the dynamic symbols
# libditask_runtime.so exports (nm -D --defined-only, demangled, without parameter lists) must be
# exactly the allowed lists in tests/package/surface/. A header or symbol that is not on its list
# fails (internals must not leak into what modules see); one on the list that is gone fails too,
# so the lists stay a true record. To change the surface on purpose, edit the lists.
#   surface_test.sh <build dir> <source dir>
set -euo pipefail
build="${1:?build dir}"
source_dir="${2:?source dir}"
lists="$source_dir/tests/package/surface"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0

compare() {  # compare <what> <allowed list> <actual file>
  local extra missing
  extra="$(comm -13 "$2" "$3")"
  missing="$(comm -23 "$2" "$3")"
  if [[ -n "$extra" ]]; then
    echo "surface: $1 not on the allowed list ($2):"
    sed 's/^/  + /' <<<"$extra"
    status=1
  fi
  if [[ -n "$missing" ]]; then
    echo "surface: $1 on the allowed list but gone (remove them from $2):"
    sed 's/^/  - /' <<<"$missing"
    status=1
  fi
}

# The core's components (the torch component, where it is built, has its own list below).
for component in Unspecified runtime development; do
  cmake --install "$build" --prefix "$work/prefix" --component "$component" >/dev/null
done
(cd "$work/prefix/include" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$work/headers.txt"
LC_ALL=C sort "$lists/headers.txt" >"$work/allowed_headers.txt"
compare "installed headers" "$work/allowed_headers.txt" "$work/headers.txt"
if [[ -f "$build/torch/cmake_install.cmake" ]]; then
  cmake --install "$build" --prefix "$work/torch" --component torch >/dev/null
  (cd "$work/torch/include" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$work/torch_headers.txt"
  LC_ALL=C sort "$lists/headers_torch.txt" >"$work/allowed_torch_headers.txt"
  compare "installed headers of the torch component" "$work/allowed_torch_headers.txt" "$work/torch_headers.txt"
fi

library="$(readlink -f "$build/lib/libditask_runtime.so")"
nm -DC --defined-only "$library" | cut -d' ' -f3- | sed 's/(.*//' | LC_ALL=C sort -u >"$work/symbols.txt"
grep -v '^#' "$lists/symbols.txt" | LC_ALL=C sort -u >"$work/allowed_symbols.txt"
compare "exported symbols" "$work/allowed_symbols.txt" "$work/symbols.txt"

if ((status == 0)); then
  echo "surface ok: $(wc -l <"$work/headers.txt") headers, $(wc -l <"$work/symbols.txt") symbols"
fi
exit $status
