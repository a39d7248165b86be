#!/bin/sh
# mcp_call_http.sh MCP_CALL SERVER
#
# mcp-call over Streamable HTTP against the test server (`--http 0` picks a free port and
# prints the URL first). Checks, in both eras:
# - a call with --header reaches the server with that header and prints the result;
# - a cancel 300 ms into a 5 s tool exits 3 at once; the modern era closes the request's
#   stream (the server logs it as closed by the client, and no notice is POSTed), the legacy
#   era POSTs notifications/cancelled with the request id and reason.
set -u
. "$(dirname "$0")/lib.sh"
mcp_call=$1 server=$2

log=$scratch/server.log out=$scratch/stdout err=$scratch/stderr url_file=$scratch/url
rm -f "$log" "$url_file"

# The server serves until its stdin closes: feed it from a sleep we kill at the end.
sleep 60 | "$server" --http 0 --modern --log "$log" >"$url_file" 2>&1 &
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    [ -s "$url_file" ] && break
    sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$url_file" | head -n 1)
cleanup() { pkill -P $$ sleep 2>/dev/null; }
trap cleanup EXIT
[ -n "$url" ] || { fail "the server printed no URL"; cat "$url_file"; exit 1; }

"$mcp_call" --header 'X-Demo: 42' --call echo --args '{"text":"over http"}' --http "$url" >"$out" 2>"$err"
code=$?
show stdout "$out"; show stderr "$err"
[ "$code" -eq 0 ] || fail "echo over HTTP exited $code"
grep -qF '"text":"over http"' "$out" || fail "echo over HTTP printed no result"
grep -qF '"x-demo":"42"' "$log" || fail "the server did not get the X-Demo header"
check_no_sanitizer_report "$err"

for mode in modern legacy; do
    : >"$log"
    start=$(now_ms)
    "$mcp_call" --mode "$mode" --call slow --args '{"ms":5000}' --cancel-after-ms 300 --reason R \
        --http "$url" >"$out" 2>"$err"
    code=$?
    elapsed=$(( $(now_ms) - start ))
    echo "$mode: exit code $code after $elapsed ms"
    show stderr "$err"
    [ "$code" -eq 3 ] || fail "$mode: exit code $code, want 3"
    [ "$elapsed" -lt 2500 ] || fail "$mode: the run took $elapsed ms"
    check_no_sanitizer_report "$err"
    id=$(sed -n 's/^cancelled: request \([1-9][0-9]*\) (reason: R)$/\1/p' "$err")
    [ -n "$id" ] || fail "$mode: no 'cancelled: request N (reason: R)' line"
    sleep 0.3 # the server notices a closed stream on its next poll
    show "server log" "$log"
    if [ "$mode" = modern ]; then
        grep -q "\"closed_by_client\":$id[,}]" "$log" || fail "modern: the server did not see request $id's stream close"
        ! grep -q '"method":"notifications/cancelled"' "$log" || fail "modern: a notice was POSTed"
    else
        grep '"method":"notifications/cancelled"' "$log" | grep -q "\"requestId\":$id[,}]" ||
            fail "legacy: no notifications/cancelled for request $id"
    fi
done
[ "$failures" -eq 0 ]
