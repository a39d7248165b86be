#!/bin/sh
# mcp_call_listen.sh MCP_CALL SERVER
#
# mcp-call --listen against the test server:
# - modern era, --listen-ms: exit 0 once the time is up (not before), and stdout holds one JSON
#   line per notification: the acknowledgement first, then what the server sent on the listen;
# - modern era, interrupted (SIGINT): exit 0 at once, and the server read the listen's cancel;
# - handshake era: the listen becomes resources/subscribe, and the library's acknowledgement
#   says what the server honours.
set -u
. "$(dirname "$0")/lib.sh"
mcp_call=$1 server=$2

log=$scratch/server.log out=$scratch/stdout err=$scratch/stderr
events='[{"kind":"tools"},{"kind":"updated","uri":"test://hello"},{"kind":"prompts"}]'

echo "== modern, --listen-ms 1500"
rm -f "$log"
start=$(now_ms)
"$mcp_call" --listen --listen-ms 1500 --listen-uri test://hello \
    --stdio "$server" --modern --log "$log" --emit-on-listen "$events" >"$out" 2>"$err"
code=$?
elapsed=$(( $(now_ms) - start ))
echo "exit code $code after $elapsed ms"
show stdout "$out"
show stderr "$err"
[ "$code" -eq 0 ] || fail "exit code $code, want 0"
[ "$elapsed" -ge 1400 ] || fail "the listen ended after $elapsed ms, before --listen-ms"
[ "$elapsed" -lt 10000 ] || fail "the listen took $elapsed ms to end"
head -n 1 "$out" | grep -qF '"method":"notifications/subscriptions/acknowledged"' ||
    fail "the first line is not the acknowledgement"
for method in tools/list_changed resources/updated prompts/list_changed; do
    grep -qF "\"method\":\"notifications/$method\"" "$out" || fail "no $method line"
done
[ "$(wc -l <"$out")" -eq 4 ] || fail "want 4 lines on stdout"
check_no_sanitizer_report "$err"

echo "== modern, interrupted"
rm -f "$log"
# Emptied here, not by the redirection (that happens in the child, maybe after the first look).
: >"$out"
"$mcp_call" --listen --stdio "$server" --modern --log "$log" >"$out" 2>"$err" &
pid=$!
waited=0
until grep -qF 'acknowledged' "$out" 2>/dev/null || [ "$waited" -ge 100 ]; do
    sleep 0.1
    waited=$((waited + 1))
done
start=$(now_ms)
kill -INT "$pid"
wait "$pid"
code=$?
elapsed=$(( $(now_ms) - start ))
echo "exit code $code, $elapsed ms after SIGINT"
show stdout "$out"
show stderr "$err"
show "server log" "$log"
[ "$code" -eq 0 ] || fail "exit code $code, want 0"
[ "$elapsed" -lt 5000 ] || fail "$elapsed ms from SIGINT to exit"
id=$(grep '"method":"subscriptions/listen"' "$log" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
[ -n "$id" ] || fail "the server read no subscriptions/listen"
grep '"method":"notifications/cancelled"' "$log" | grep -q "\"requestId\":$id[,}]" ||
    fail "the server read no notifications/cancelled for the listen ($id)"
check_no_sanitizer_report "$err"

echo "== handshake era"
rm -f "$log"
"$mcp_call" --listen --listen-ms 300 --listen-uri test://hello --listen-level info \
    --stdio "$server" --log "$log" >"$out" 2>"$err"
code=$?
show stdout "$out"
show stderr "$err"
show "server log" "$log"
[ "$code" -eq 0 ] || fail "exit code $code, want 0"
grep -qF '"resourceSubscriptions":["test://hello"]' "$out" ||
    fail "the acknowledgement does not hold the subscribed URI"
grep -qF '"method":"resources/subscribe"' "$log" || fail "the server read no resources/subscribe"
grep -qF '"method":"logging/setLevel"' "$log" || fail "the server read no logging/setLevel"
check_no_sanitizer_report "$err"
[ "$failures" -eq 0 ]
