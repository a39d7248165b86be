#!/bin/sh
# mcp_call_precancel.sh MCP_CALL SERVER
#
# With --precancel the token is cancelled before the call: mcp-call exits 3 at once, prints
# `cancelled: request 0 (reason: R)` (0: no request was sent), and the server hears nothing
# of the call (no tools/call, no notifications/cancelled), though it
# did see the handshake (initialize).
set -u
. "$(dirname "$0")/lib.sh"
mcp_call=$1 server=$2

log=$scratch/server.log out=$scratch/stdout err=$scratch/stderr
rm -f "$log"

start=$(now_ms)
run "$mcp_call" --call slow --args "{\"ms\":$slow_ms}" --precancel --reason R \
    --stdio "$server" --log "$log" >"$out" 2>"$err"
code=$?
elapsed=$(( $(now_ms) - start ))

echo "exit code $code after $elapsed ms"
show stdout "$out"
show stderr "$err"
show "server log" "$log"
echo "---"

[ "$code" -eq 3 ] || fail "exit code $code, want 3 (cancelled)"
[ "$elapsed" -lt "$bound_ms" ] || fail "the run took $elapsed ms"
check_no_sanitizer_report "$err"
# Never sent, so no request id: the documented line with N = 0.
grep -qx 'cancelled: request 0 (reason: R)' "$err" || fail "no 'cancelled: request 0 (reason: R)' line on stderr"
grep -qF '"method":"initialize"' "$log" || fail "the server log has no initialize"
! grep -qF '"method":"tools/call"' "$log" || fail "the server was sent a tools/call"
! grep -qF '"method":"notifications/cancelled"' "$log" || fail "the server was sent a cancel notice"
[ "$failures" -eq 0 ]
