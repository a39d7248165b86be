#!/bin/sh
# mcp_call_task.sh MCP_CALL SERVER
#
# mcp-call --task against the test server in the modern era (stdio, then HTTP):
# - a task-backed call exits 0 with the task's final result on stdout (and in the
#   2025-11-25 era, against --legacy-tasks);
# - a failed task exits 1 with the task's JSON-RPC error;
# - --cancel-after-ms exits 3 at once, and the server read exactly one tasks/cancel for the
#   task, after it had polled it (so after the task existed), and no notifications/cancelled;
# - the same cancel over HTTP: one tasks/cancel POST, carrying Mcp-Name: the task id.
set -u
. "$(dirname "$0")/lib.sh"
mcp_call=$1 server=$2

out=$scratch/stdout err=$scratch/stderr

# 1. Completed: the result, not the task.
"$mcp_call" --mode modern --task --call task --args '{"steps":2}' --stdio "$server" --modern \
    >"$out" 2>"$err"
code=$?
echo "complete: exit $code"; show stdout "$out"; show stderr "$err"
[ "$code" -eq 0 ] || fail "a completed task: exit $code, want 0"
grep -q 'task done after 2 steps' "$out" || fail "the task's result is not on stdout"
grep -q '"taskId"' "$out" && fail "stdout shows the task, not its result"
check_no_sanitizer_report "$err"

# 1b. The same against a 2025-11-25 server offering that era's experimental tasks: the
# tool runs as a task (the server read a tools/call carrying "task" and a tasks/result).
log=$scratch/legacy.log
rm -f "$log"
"$mcp_call" --mode legacy --task --call task --args '{"steps":2}' \
    --stdio "$server" --legacy-tasks --log "$log" >"$out" 2>"$err"
code=$?
echo "2025-11-25 task: exit $code"; show stdout "$out"; show stderr "$err"
[ "$code" -eq 0 ] || fail "a completed 2025-11-25 task: exit $code, want 0"
grep -q 'task done after 2 steps' "$out" || fail "the 2025-11-25 task's result is not on stdout"
grep '"method":"tools/call"' "$log" | grep -q '"task":{}' ||
    fail "the tools/call was not task-augmented"
grep -q '"method":"tasks/result"' "$log" || fail "the server read no tasks/result"

# 2. Failed: the task's JSON-RPC error, exit 1.
"$mcp_call" --mode modern --task --call task --args '{"steps":1,"outcome":"fail"}' \
    --stdio "$server" --modern >"$out" 2>"$err"
code=$?
echo "fail: exit $code"; show stdout "$out"
[ "$code" -eq 1 ] || fail "a failed task: exit $code, want 1"
grep -q '"code":-32603' "$out" || fail "the task's error code is not on stdout"

# 3. Cancelled over stdio.
log=$scratch/server.log
rm -f "$log"
start=$(now_ms)
"$mcp_call" --mode modern --task --call task --args '{"outcome":"never","steps":0}' \
    --cancel-after-ms 300 --reason R --stdio "$server" --modern --log "$log" >"$out" 2>"$err"
code=$?
elapsed=$(( $(now_ms) - start ))
echo "cancel: exit $code after $elapsed ms"; show stderr "$err"; show "server log" "$log"
[ "$code" -eq 3 ] || fail "a cancelled task-backed call: exit $code, want 3"
[ "$elapsed" -lt 2500 ] || fail "the run took $elapsed ms; the cancel should end it at once"
grep -q '^cancelled: .*(reason: R)$' "$err" || fail "no 'cancelled: ... (reason: R)' line on stderr"
check_no_sanitizer_report "$err"
# mcp-call has exited and close reaped the server: the log is complete.
cancels=$(grep -c '"method":"tasks/cancel"' "$log")
[ "$cancels" -eq 1 ] || fail "the server read $cancels tasks/cancel, want 1"
grep '"method":"tasks/cancel"' "$log" | grep -q '"taskId":"task-1"' ||
    fail "the tasks/cancel does not name task-1"
first_poll=$(grep -n '"method":"tasks/get"' "$log" | head -n 1 | cut -d: -f1)
cancel_line=$(grep -n '"method":"tasks/cancel"' "$log" | head -n 1 | cut -d: -f1)
[ -n "$first_poll" ] && [ -n "$cancel_line" ] && [ "$cancel_line" -gt "$first_poll" ] ||
    fail "the tasks/cancel came before the client knew the task (no tasks/get before it)"
grep -q '"method":"notifications/cancelled"' "$log" &&
    fail "notifications/cancelled was sent for a request answered with a task"

# 4. Cancelled over HTTP. The server serves until its stdin closes: a fifo this script holds
# open (fd 3) and closes at the end.
http_log=$scratch/http.log url_file=$scratch/url stdin_fifo=$scratch/stdin
rm -f "$http_log" "$url_file" "$stdin_fifo"
mkfifo "$stdin_fifo"
"$server" --http 0 --modern --log "$http_log" <"$stdin_fifo" >"$url_file" 2>&1 &
server_pid=$!
exec 3>"$stdin_fifo"
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    [ -s "$url_file" ] && break
    sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$url_file" | head -n 1)
"$mcp_call" --mode modern --task --call task --args '{"outcome":"never","steps":0}' \
    --cancel-after-ms 300 --http "$url" >"$out" 2>"$err"
code=$?
exec 3>&-
wait "$server_pid"
echo "http cancel: exit $code"; show stderr "$err"
[ "$code" -eq 3 ] || fail "a cancelled task-backed call over HTTP: exit $code, want 3"
posts=$(grep -c '"Mcp-Method":"tasks/cancel"\|"mcp-method":"tasks/cancel"' "$http_log")
[ "$posts" -eq 1 ] || fail "the HTTP server got $posts tasks/cancel POSTs, want 1"
grep -i '"mcp-method":"tasks/cancel"' "$http_log" | grep -qi '"mcp-name":"task-1"' ||
    fail "the tasks/cancel POST does not carry Mcp-Name: task-1"
[ "$failures" -eq 0 ]
