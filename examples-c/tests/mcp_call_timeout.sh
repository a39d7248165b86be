#!/bin/sh
# mcp_call_timeout.sh MCP_CALL SERVER
#
# A 5 s tool call ($slow_ms) with --timeout-ms 200: mcp-call exits 4 soon after 200 ms, and the server
# is told, as for a cancel: it read the tools/call, then exactly one notifications/cancelled
# for it whose reason says it timed out.
set -u
. "$(dirname "$0")/lib.sh"
mcp_call=$1 server=$2

log=$scratch/server.log out=$scratch/stdout err=$scratch/stderr
rm -f "$log"

start=$(now_ms)
run "$mcp_call" --call slow --args "{\"ms\":$slow_ms}" --timeout-ms 200 \
    --stdio "$server" --log "$log" >"$out" 2>"$err"
code=$?
elapsed=$(( $(now_ms) - start ))

echo "exit code $code after $elapsed ms"
show stdout "$out"
show stderr "$err"
show "server log" "$log"
echo "---"

[ "$code" -eq 4 ] || fail "exit code $code, want 4 (timeout)"
[ "$elapsed" -lt "$bound_ms" ] || fail "the run took $elapsed ms"
check_no_sanitizer_report "$err"
id=$(sed -n 's/^TIMEOUT: .*(request \([1-9][0-9]*\))$/\1/p' "$err")
if [ -z "$id" ]; then
    fail "no 'TIMEOUT: ... (request N)' line on stderr"
    exit 1
fi

request_line=$(grep -n '"method":"tools/call"' "$log" | grep "\"id\":$id[,}]" | cut -d: -f1)
cancels=$(grep -c '"method":"notifications/cancelled"' "$log")
cancel=$(grep -n '"method":"notifications/cancelled"' "$log" | head -n 1)
cancel_line=${cancel%%:*}

[ -n "$request_line" ] || fail "the server log has no tools/call with id $id"
[ "$cancels" -eq 1 ] || fail "the server log has $cancels notifications/cancelled lines, want 1"
if [ "$cancels" -ge 1 ]; then
    echo "$cancel" | grep -q "\"requestId\":$id[,}]" || fail "the notice does not name request $id"
    echo "$cancel" | grep -q '"reason":"[^"]*timed out' || fail "the notice's reason does not say 'timed out'"
    [ -z "$request_line" ] || [ "$cancel_line" -gt "$request_line" ] ||
        fail "the server read the cancel before the request"
fi
[ "$failures" -eq 0 ]
