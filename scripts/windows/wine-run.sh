#!/usr/bin/env bash
# wine-run.sh PROGRAM.exe [ARG...]: runs a Windows program under Wine with the environment of
# scripts/wine-env.sh (its prefix, no X display, no debug chatter), and exits with its exit code.
# A Windows C program writes CRLF line ends to stdout and stderr (text mode); they are turned
# into LF here, so that the tests' checks (grep -x, sed ... $) read the same as on Linux.
set -u
# shellcheck source=scripts/wine-env.sh
. "$(dirname "$0")/../wine-env.sh"
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
wine "$@" >"$out" 2>"$err" </dev/stdin
code=$?
tr -d '\r' <"$out"
tr -d '\r' <"$err" >&2
exit "$code"
