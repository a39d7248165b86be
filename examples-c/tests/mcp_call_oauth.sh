#!/bin/sh
# mcp_call_oauth.sh MCP_CALL SERVER
#
# mcp-call's OAuth options against the test server's --require-auth mode (an MCP server that
# is its own authorization server; its /authorize redirects at once). The "browser" is a
# python3 urllib GET, which follows the redirect:
# - --oauth: mcp-call prints the authorization URL on stderr and waits on its loopback
#   listener; the browser's GET lands there, the call completes;
# - --oauth-manual: the browser stops at the redirect, and its Location is pasted on stdin;
# - --client-id/--client-secret: a pre-registered client, so no /register; a declined
#   authorization exits 5 with UNAUTHORIZED;
# - --scope: the scope asked for is the one given;
# - the OAuth options go with --http and --oauth (usage errors, exit 2).
set -u
. "$(dirname "$0")/lib.sh"
mcp_call=$1 server=$2

log=$scratch/server.log out=$scratch/stdout err=$scratch/stderr url_file=$scratch/url
rm -f "$log" "$url_file"
sleep 120 | "$server" --http 0 --require-auth --log "$log" >"$url_file" 2>&1 &
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    [ -s "$url_file" ] && break
    sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$url_file" | head -n 1)
cleanup() { pkill -P $$ sleep 2>/dev/null; }
trap cleanup EXIT
[ -n "$url" ] || { fail "the server printed no URL"; cat "$url_file"; exit 1; }

# The authorization URL mcp-call printed (the line after its "open this URL" line), waiting
# up to 20 s for it to appear in FILE.
authorization_url() {
    for _ in $(seq 1 200); do
        found=$(sed -n '/open this URL in a browser/{n;p;}' "$1" | head -n 1)
        [ -n "$found" ] && { echo "$found"; return 0; }
        sleep 0.1
    done
    return 1
}

# browse URL follow|location: GET URL; "follow" follows the redirect and prints the page,
# "location" prints where it redirects without following.
browse() {
    python3 - "$1" "$2" <<'PY'
import sys, urllib.request, urllib.error
url, how = sys.argv[1], sys.argv[2]
class Stop(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None
handlers = [urllib.request.ProxyHandler({})] + ([Stop()] if how == "location" else [])
opener = urllib.request.build_opener(*handlers)
try:
    with opener.open(url, timeout=20) as r:
        print(r.read().decode())
except urllib.error.HTTPError as e:
    if how == "location" and 300 <= e.code < 400:
        print(e.headers["Location"])
    else:
        raise
PY
}

# 1. --oauth: the loopback listener.
"$mcp_call" --oauth --scope "mcp:read custom:extra" --call echo --args '{"text":"with oauth"}' --http "$url" \
    >"$out" 2>"$err" &
pid=$!
if auth=$(authorization_url "$err"); then
    page=$(browse "$auth" follow) || fail "--oauth: the browser's GET failed"
    echo "$page" | grep -q "You can close this window" || fail "--oauth: no page from the listener: $page"
else
    fail "--oauth: no authorization URL on stderr"
fi
wait $pid
code=$?
show stdout "$out"; show stderr "$err"
[ "$code" -eq 0 ] || fail "--oauth exited $code"
grep -qF '"text":"with oauth"' "$out" || fail "--oauth printed no result"
grep -q 'waiting for the browser to come back to http://127.0.0.1:' "$err" ||
    fail "--oauth did not name its loopback listener"
case $auth in *"scope=mcp%3Aread"*"custom%3Aextra"*) ;; *) fail "--scope not in $auth" ;; esac
grep -q '"path":"/register"' "$log" || fail "--oauth: no dynamic registration"
check_no_sanitizer_report "$err"

# 2. --oauth-manual: the redirect URL comes from stdin.
: >"$log"
fifo=$scratch/stdin
rm -f "$fifo" && mkfifo "$fifo"
"$mcp_call" --oauth-manual --list-tools --http "$url" <"$fifo" >"$out" 2>"$err" &
pid=$!
exec 3>"$fifo"
if auth=$(authorization_url "$err"); then
    location=$(browse "$auth" location) || fail "--oauth-manual: the browser's GET failed"
    echo "$location" >&3
else
    fail "--oauth-manual: no authorization URL on stderr"
fi
exec 3>&-
wait $pid
code=$?
show stdout "$out"; show stderr "$err"
[ "$code" -eq 0 ] || fail "--oauth-manual exited $code"
grep -qF '"name":"echo"' "$out" || fail "--oauth-manual listed no tools"
check_no_sanitizer_report "$err"

# 3. --client-id: a pre-registered client asks with its id and does not register. This
# authorization server does not know it, and the person gives up (stdin closes): exit 5,
# UNAUTHORIZED.
: >"$log"
"$mcp_call" --mode legacy --oauth-manual --client-id pre-client --client-secret pre-secret \
    --ping --http "$url" </dev/null >"$out" 2>"$err"
code=$?
show stderr "$err"
[ "$code" -eq 5 ] || fail "a declined authorization exited $code, want 5"
grep -q '^UNAUTHORIZED: ' "$err" || fail "a declined authorization is not UNAUTHORIZED"
grep -q 'client_id=pre-client' "$err" || fail "--client-id is not in the authorization URL"
! grep -q '"path":"/register"' "$log" || fail "a pre-registered client registered"
! grep -q 'pre-secret' "$err" || fail "the client secret reached stderr"
check_no_sanitizer_report "$err"

# 4. --client-credentials: no person; a secret the authorization server knows gets the
# token (a second server, with that client registered in advance). A --client-key file that
# is no key is refused at connect: exit 2, nothing of it on stderr.
cc_log=$scratch/cc.log cc_url_file=$scratch/cc_url
sleep 120 | "$server" --http 0 --require-auth --auth-client machine:s3cret-machine \
    --log "$cc_log" >"$cc_url_file" 2>&1 &
for _ in $(seq 1 50); do
    [ -s "$cc_url_file" ] && break
    sleep 0.1
done
cc_url=$(sed -n 's/^listening on //p' "$cc_url_file" | head -n 1)
"$mcp_call" --client-credentials --client-id machine --client-secret s3cret-machine \
    --call echo --args '{"text":"machine"}' --http "$cc_url" </dev/null >"$out" 2>"$err"
code=$?
show stdout "$out"; show stderr "$err"
[ "$code" -eq 0 ] || fail "--client-credentials exited $code"
grep -qF '"text":"machine"' "$out" || fail "--client-credentials printed no result"
grep -q 'client_credentials' "$cc_log" || fail "no client_credentials token request"
! grep -q '"path":"/authorize"' "$cc_log" || fail "--client-credentials asked a person"
! grep -q 's3cret-machine' "$err" || fail "the client secret reached stderr"
key=$scratch/not-a-key.pem
printf -- '-----BEGIN PRIVATE KEY-----\nbm90LWEta2V5LXNlY3JldA==\n-----END PRIVATE KEY-----\n' >"$key"
"$mcp_call" --client-credentials --client-id machine --client-key "$key" --ping \
    --http "$cc_url" </dev/null >"$out" 2>"$err"
code=$?
show stderr "$err"
[ "$code" -eq 2 ] || fail "a --client-key that is no key exited $code, want 2"
grep -q 'private key' "$err" || fail "the refusal does not name the private key"
! grep -q 'bm90LWEta2V5' "$err" || fail "the key file's text reached stderr"
check_no_sanitizer_report "$err"
# --workload-token-file: the JWT-bearer grant; a file that holds no JWT fails before any
# token request (exit 5, UNAUTHORIZED), nothing of it on stderr.
printf 'not-a-jwt workload-secret\n' >"$key"
"$mcp_call" --workload-token-file "$key" --ping --http "$cc_url" </dev/null >"$out" 2>"$err"
code=$?
show stderr "$err"
[ "$code" -eq 5 ] || fail "a workload token file without a JWT exited $code, want 5"
grep -q 'workload token is not a compact JWT' "$err" || fail "the refusal does not say why"
! grep -q 'workload-secret' "$err" || fail "the workload token file's text reached stderr"
check_no_sanitizer_report "$err"
# --identity-assertion-file: the enterprise-managed grant; a file that holds no JWT fails
# before any token exchange (exit 5, UNAUTHORIZED), nothing of it on stderr.
printf 'not-a-jwt identity-secret\n' >"$key"
"$mcp_call" --identity-assertion-file "$key" --idp-token-endpoint "$cc_url/idp/token" \
    --client-id machine --ping --http "$cc_url" </dev/null >"$out" 2>"$err"
code=$?
show stderr "$err"
[ "$code" -eq 5 ] || fail "an identity assertion file without a JWT exited $code, want 5"
grep -q 'identity assertion is not a compact JWT' "$err" || fail "the refusal does not say why"
! grep -q 'identity-secret' "$err" || fail "the identity assertion file's text reached stderr"
check_no_sanitizer_report "$err"

# --dpop: every request carries a proof; this server issues bearer tokens, which still serve.
# A --dpop-key file that is no key is refused at connect: exit 2, nothing of it on stderr.
"$mcp_call" --client-credentials --client-id machine --client-secret s3cret-machine --dpop \
    --call echo --args '{"text":"dpop"}' --http "$cc_url" </dev/null >"$out" 2>"$err"
code=$?
show stdout "$out"; show stderr "$err"
[ "$code" -eq 0 ] || fail "--dpop exited $code"
grep -qF '"text":"dpop"' "$out" || fail "--dpop printed no result"
printf -- '-----BEGIN PRIVATE KEY-----\nbm90LWEta2V5LXNlY3JldA==\n-----END PRIVATE KEY-----\n' >"$key"
"$mcp_call" --client-credentials --client-id machine --client-secret s3cret-machine \
    --dpop-key "$key" --ping --http "$cc_url" </dev/null >"$out" 2>"$err"
code=$?
show stderr "$err"
[ "$code" -eq 2 ] || fail "a --dpop-key that is no key exited $code, want 2"
grep -q 'private key' "$err" || fail "the refusal does not name the key"
! grep -q 'bm90LWEta2V5' "$err" || fail "the key file's text reached stderr"
check_no_sanitizer_report "$err"

# 5. Usage errors.
for args in "--oauth --stdio $server" "--client-id x --http $url" "--oauth --oauth-manual --http $url" \
            "--oauth --client-secret s --http $url" "--client-credentials --client-id x --http $url" \
            "--oauth --client-credentials --client-id x --client-secret s --http $url" \
            "--client-key k --http $url" "--oauth --client-key k --http $url" \
            "--workload-token-file f --stdio $server" "--oauth --workload-token-file f --http $url" \
            "--dpop --http $url" "--dpop-key k --http $url" \
            "--identity-assertion-file f --client-id x --http $url" \
            "--identity-assertion-file f --idp-token-endpoint $url --http $url" \
            "--idp-token-endpoint $url --client-id x --client-credentials --http $url" \
            "--identity-assertion-file f --idp-token-endpoint $url --client-id x --stdio $server"; do
    # shellcheck disable=SC2086 # the words are the arguments
    "$mcp_call" $args >"$out" 2>"$err"
    code=$?
    [ "$code" -eq 2 ] || { show stderr "$err"; fail "'$args' exited $code, want 2"; }
done
[ "$failures" -eq 0 ]
