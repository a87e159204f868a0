#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fails when a Catch test name cannot be one CTest test: catch_discover_tests splits names at
# ';' (CMake's list separator), so such a test would become two names that match nothing and
# "pass" without running. Usage: check_test_names.sh <test program>...
set -u
bad=0
for program in "$@"; do
  while IFS= read -r name; do
    if [[ $name == *";"* ]]; then
      echo "error: $program: test name with ';' (CTest would not run it): $name" >&2
      bad=1
    fi
  done < <("$program" --list-test-names-only)
done
exit "$bad"
