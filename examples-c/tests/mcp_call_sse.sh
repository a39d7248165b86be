#!/bin/sh
# mcp_call_sse.sh MCP_CALL SERVER
#
# mcp-call over the 2024-11-05 HTTP+SSE transport against the test server (`--http 0 --sse`
# serves it at /sse). Checks:
# - with --sse, a call works and nothing is POSTed to the URL (the stream is opened at once);
# - without it, the client finds the transport by itself (its POSTs to the URL are refused);
# - a cancel 300 ms into a slow tool exits 3 at once, and notifications/cancelled with the
#   request id is POSTed to the endpoint.
set -u
. "$(dirname "$0")/lib.sh"
mcp_call=$1 server=$2

log=$scratch/server.log out=$scratch/stdout err=$scratch/stderr url_file=$scratch/url
rm -f "$log" "$url_file"

# The server serves until its stdin closes: feed it from a sleep we kill at the end.
sleep 60 | "$server" --http 0 --sse --log "$log" >"$url_file" 2>&1 &
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    [ -s "$url_file" ] && break
    sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$url_file" | head -n 1)
cleanup() { pkill -P $$ sleep 2>/dev/null; }
trap cleanup EXIT
[ -n "$url" ] || { fail "the server printed no URL"; cat "$url_file"; exit 1; }

for pinned in --sse ""; do
    : >"$log"
    # shellcheck disable=SC2086 # $pinned is one word or none
    run "$mcp_call" $pinned --call echo --args '{"text":"over sse"}' --http "$url" >"$out" 2>"$err"
    code=$?
    show stdout "$out"; show stderr "$err"
    [ "$code" -eq 0 ] || fail "echo ${pinned:-(auto)} exited $code"
    grep -qF '"text":"over sse"' "$out" || fail "echo ${pinned:-(auto)} printed no result"
    check_no_sanitizer_report "$err"
    posts=$(grep -c '"method":"POST","path":"/sse"' "$log")
    if [ -n "$pinned" ]; then
        [ "$posts" -eq 0 ] || fail "--sse: $posts POSTs to the URL"
    else
        [ "$posts" -eq 2 ] || fail "auto: $posts POSTs to the URL, want 2 (the probe, initialize)"
    fi
done

: >"$log"
start=$(now_ms)
run "$mcp_call" --sse --call slow --args "{\"ms\":$slow_ms}" --cancel-after-ms 300 --reason R \
    --http "$url" >"$out" 2>"$err"
code=$?
elapsed=$(( $(now_ms) - start ))
echo "cancel: exit code $code after $elapsed ms"
show stderr "$err"
[ "$code" -eq 3 ] || fail "cancel: exit code $code, want 3"
[ "$elapsed" -lt "$bound_ms" ] || fail "cancel: the run took $elapsed ms"
check_no_sanitizer_report "$err"
id=$(sed -n 's/^cancelled: request \([1-9][0-9]*\) (reason: R)$/\1/p' "$err")
[ -n "$id" ] || fail "no 'cancelled: request N (reason: R)' line"
show "server log" "$log"
grep '"path":"/messages' "$log" | grep '"method":"notifications/cancelled"' |
    grep -q "\"requestId\":$id[,}]" || fail "no notifications/cancelled for request $id"
[ "$failures" -eq 0 ]
