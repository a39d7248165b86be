#!/bin/sh
# check_exit.sh CODE STDOUT STDERR PROGRAM [ARG...]
#
# Runs PROGRAM and fails unless it exits with CODE, its stdout contains the fixed string STDOUT
# and its stderr contains the fixed string STDERR ("-" checks nothing).
# Used by the mcp-call tests, which are about exit codes as much as output.
set -u
want_code=$1 want_out=$2 want_err=$3
shift 3

. "$(dirname "$0")/lib.sh"
out=$(mktemp "$scratch/stdout.XXXXXX") || exit 1
err=$(mktemp "$scratch/stderr.XXXXXX") || exit 1
trap 'rm -f "$out" "$err"' EXIT

run "$@" >"$out" 2>"$err"
code=$?

echo "command: $*"
echo "exit code: $code (want $want_code)"
show stdout "$out"
show stderr "$err"
echo "---"

[ "$code" -eq "$want_code" ] || fail "exit code $code, want $want_code"
if [ "$want_out" != - ] && ! grep -qF -- "$want_out" "$out"; then
    fail "stdout does not contain: $want_out"
fi
if [ "$want_err" != - ] && ! grep -qF -- "$want_err" "$err"; then
    fail "stderr does not contain: $want_err"
fi
check_no_sanitizer_report "$err"
[ "$failures" -eq 0 ]
