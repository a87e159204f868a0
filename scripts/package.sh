#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages with CPack (cmake/DitaskPackage.cmake): installs the Debian packages
# when missing, configures build/release with the `release` preset, builds it, runs
# `cpack -G DEB` there and prints the paths of the .deb files:
#   build/release/ditask_<version>_<arch>.deb      the launcher, the runtime, example plugins, configs
#   build/release/ditask-dev_<version>_<arch>.deb  headers, libditask_launcher.a, the CMake package
#   build/release/python3-ditask_<version>_<arch>.deb  the Python package ditask, where the build
#                                                  has the Python component (pybind11-dev, python3-dev)
# Install them with `apt install ./build/release/ditask_<version>_<arch>.deb ...` (all paths).
# tests/package/deb_test.sh checks them (scripts/test.sh runs both). Works from any cwd; logs go
# to build/logs/package/.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

timer_start "packages built"
install_packages

# The README's build: `cmake --preset release` (Release, no tests). -Werror stays off: a new
# compiler warning must not stop a package build (build/release may hold an older cache).
step "release: configure (cmake --preset release)" cmake --preset release -DDITASK_WERROR=OFF
step "release: build (-j$JOBS)" cmake --build --preset release -j "$JOBS"
# Old packages of another version must not be mistaken for these.
rm -f build/release/ditask_*.deb build/release/ditask-dev_*.deb build/release/python3-ditask_*.deb
step "package: cpack -G DEB (build/release)" bash -c 'cd build/release && cpack -G DEB'

debs=(build/release/ditask_*.deb build/release/ditask-dev_*.deb)
if [[ -f build/release/lib/ditask/python/ditask/__init__.py ]]; then
  debs+=(build/release/python3-ditask_*.deb)
fi
for deb in "${debs[@]}"; do
  [[ -f "$deb" ]] || { echo "error: cpack wrote no $deb" >&2; exit 1; }
done
for deb in "${debs[@]}"; do
  echo "$DITASK_ROOT/$deb ($(du -h "$deb" | cut -f 1))"
done
