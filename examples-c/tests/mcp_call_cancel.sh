#!/bin/sh
# mcp_call_cancel.sh MCP_CALL SERVER
#
# Cancels a 5 s tool call ($slow_ms) 300 ms in, from mcp-call's canceller thread, and checks:
# - mcp-call exits 3 well before the tool would have finished (the whole run < 2.5 s, $bound_ms);
# - stderr has one `cancelled: request N (reason: R)` line;
# - the server read the tools/call request N, then exactly one notifications/cancelled,
#   naming request N and the reason R.
set -u
. "$(dirname "$0")/lib.sh"
mcp_call=$1 server=$2

log=$scratch/server.log out=$scratch/stdout err=$scratch/stderr
rm -f "$log"

start=$(now_ms)
run "$mcp_call" --call slow --args "{\"ms\":$slow_ms}" --cancel-after-ms 300 --reason R \
    --stdio "$server" --log "$log" >"$out" 2>"$err"
code=$?
elapsed=$(( $(now_ms) - start ))

echo "exit code $code after $elapsed ms"
show stdout "$out"
show stderr "$err"
show "server log" "$log"
echo "---"

[ "$code" -eq 3 ] || fail "exit code $code, want 3 (cancelled)"
[ "$elapsed" -lt "$bound_ms" ] || fail "the run took $elapsed ms; the cancel should end it at once"
[ ! -s "$out" ] || fail "stdout should be empty after a cancel"
check_no_sanitizer_report "$err"

# The one `cancelled` line names the request id and the reason.
[ "$(grep -c '^cancelled' "$err")" -eq 1 ] || fail "want exactly one line starting with 'cancelled' on stderr"
id=$(sed -n 's/^cancelled: request \([1-9][0-9]*\) (reason: R)$/\1/p' "$err")
if [ -z "$id" ]; then
    fail "no 'cancelled: request N (reason: R)' line on stderr"
    exit 1
fi

# mcp-call has exited, and closing the client reaps the server first: the log is complete.
request_line=$(grep -n '"method":"tools/call"' "$log" | grep "\"id\":$id[,}]" | cut -d: -f1)
cancels=$(grep -c '"method":"notifications/cancelled"' "$log")
cancel=$(grep -n '"method":"notifications/cancelled"' "$log" | head -n 1)
cancel_line=${cancel%%:*}

[ -n "$request_line" ] || fail "the server log has no tools/call with id $id"
[ "$cancels" -eq 1 ] || fail "the server log has $cancels notifications/cancelled lines, want 1"
if [ "$cancels" -ge 1 ]; then
    echo "$cancel" | grep -q "\"requestId\":$id[,}]" || fail "the notice does not name request $id"
    echo "$cancel" | grep -qF '"reason":"R"' || fail "the notice does not carry the reason R"
    [ -z "$request_line" ] || [ "$cancel_line" -gt "$request_line" ] ||
        fail "the server read the cancel before the request"
fi
[ "$failures" -eq 0 ]
