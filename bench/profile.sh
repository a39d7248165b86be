#!/usr/bin/env bash
# Where a sequential call's instructions go: runs the harness's profile loop (sequential 1 KiB
# echo calls) under valgrind --tool=callgrind and prints instructions per call (the client
# process, user space: repeatable from run to run, unlike times on a shared machine) and the
# functions that take the most. Needs valgrind; builds what bench/run.sh builds.
#
#   bash bench/profile.sh [stdio|modern|http|http-modern] [CALLS]
#
# stdio runs against bench/echo_server.c, the others against the test server (the minimal
# server speaks neither the modern era nor HTTP). The warm-up calls and connecting are in the
# total too: with the default 2000 calls they are under 10 % of it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out="${MCPC_BENCH_OUT:-$root/.cache/bench}"
mkdir -p "$out"
profile=${1:-stdio}
calls=${2:-2000}

cargo build --release --quiet
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
cflags=(-O2 -g -Wall -Wextra -Werror -std=c11)
cc "${cflags[@]}" -I include -o "$out/bench" bench/bench.c "$target/release/libmcpc.a" \
  -lpthread -ldl -lm
cc "${cflags[@]}" -o "$out/echo_server" bench/echo_server.c
server="$target/release/mcpc-test-server"
[ "$profile" = stdio ] && server="$out/echo_server"

trace="$out/callgrind.$profile.out"
MCPC_BENCH_PROFILE=$profile valgrind --tool=callgrind --callgrind-out-file="$trace" \
  "$out/bench" "$server" "$calls" 1 1 2>"$out/callgrind.$profile.log" >/dev/null
total=$(grep -o 'refs: *[0-9,]*' "$out/callgrind.$profile.log" | tr -dc 0-9)
warmup=$((calls < 200 ? calls / 4 + 1 : 200))
echo "profile=$profile calls=$((calls + warmup)) instructions=$total per_call=$((total / (calls + warmup)))"
callgrind_annotate "$trace" 2>/dev/null | sed -n '/^Ir/,$p' | sed -n '3,22p'
