#!/bin/sh
# check_exit.sh CODE STDOUT STDERR PROGRAM [ARG...]
#
# Runs PROGRAM and fails unless it exits with CODE, its stdout contains the fixed string STDOUT
# and its stderr contains the fixed string STDERR (an empty string checks nothing).
# Used by the mcp-call tests, which are about exit codes as much as output.
set -u
want_code=$1 want_out=$2 want_err=$3
shift 3

scratch=${MCPC_TEST_SCRATCH:-${TMPDIR:-/tmp}}
mkdir -p "$scratch"
out=$(mktemp "$scratch/stdout.XXXXXX") || exit 1
err=$(mktemp "$scratch/stderr.XXXXXX") || exit 1
trap 'rm -f "$out" "$err"' EXIT

"$@" >"$out" 2>"$err"
code=$?

echo "command: $*"
echo "exit code: $code (want $want_code)"
echo "--- stdout"; cat "$out"
echo "--- stderr"; cat "$err"
echo "---"

status=0
if [ "$code" -ne "$want_code" ]; then
    echo "FAIL: exit code $code, want $want_code"
    status=1
fi
if [ -n "$want_out" ] && ! grep -qF -- "$want_out" "$out"; then
    echo "FAIL: stdout does not contain: $want_out"
    status=1
fi
if [ -n "$want_err" ] && ! grep -qF -- "$want_err" "$err"; then
    echo "FAIL: stderr does not contain: $want_err"
    status=1
fi
exit $status
