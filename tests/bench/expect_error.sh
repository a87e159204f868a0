#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A bench program that must fail cleanly:
#   expect_error.sh CODE REGEX [--usage] -- PROGRAM ARGS...
# checks that PROGRAM exits with CODE, writes nothing on stdout, and that the first line on stderr
# matches REGEX (grep -E); with --usage, that a "usage: " line follows it.
set -u
code=$1 regex=$2
shift 2
usage=0
if [[ ${1:-} == --usage ]]; then
  usage=1
  shift
fi
[[ ${1:-} == -- ]] && shift
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$("$@" 2>"$err")
rc=$?
cat "$err"
fail() {
  echo "expect_error: $*" >&2
  exit 1
}
((rc == code)) || fail "exit code $rc, expected $code"
[[ -z $out ]] || fail "stdout not empty: $out"
head -n 1 "$err" | grep -Eq -- "$regex" || fail "the first line on stderr does not match '$regex'"
if ((usage)); then
  sed -n 2p "$err" | grep -q "^usage: " || fail "no usage line after the error"
fi
