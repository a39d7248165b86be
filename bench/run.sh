#!/usr/bin/env bash
# Builds mcpc, the test server, the minimal C echo server (echo_server.c), the C harness
# (bench.c), the floor (floor.c), wait_cost.c, many_clients.c, large_results.c and the peer
# drivers; runs every case against both servers, unpinned and pinned to one core (taskset -c 0:
# client and server share it, so every context switch is paid), in MCPC_BENCH_ROUNDS (3)
# interleaved rounds; then many idle clients in one process (many_clients.c and the rmcp
# driver's `many` mode, at each N of MCPC_BENCH_MANY, "10 100 1000"); then one large result per
# transport and size of MCPC_BENCH_LARGE_MIB, "1 16 64" (large_results.c); prints the tables
# with the median of the rounds (bench/table.py), the targets of issues 16, 33 and 36 and their
# status.
#
#   bash bench/run.sh            the full run (about 15 minutes on 2 cores), peers included
#   bash bench/run.sh --smoke    a few iterations, one round, no peers, 10 clients at once,
#                                1 MiB results: proves it still builds and runs
#                                (scripts/test.sh calls this); its figures mean nothing
#   bash bench/run.sh --many     only the many-clients cases (mcpc and rmcp), a few minutes
#   bash bench/run.sh --large    only the large results (a few seconds)
#   bash bench/run.sh > tables.md   the tables of docs/benchmarks.md, to paste over its run section
#
# Exits non-zero when a case fails to run, never because a figure is slow. A peer that cannot be
# installed is reported in the table as not run (MCPC_BENCH_REQUIRE_PEERS=1 makes that fatal).
# Everything built or installed goes under .cache/bench; the raw results are in
# .cache/bench/results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out="${MCPC_BENCH_OUT:-$root/.cache/bench}" # MCPC_BENCH_OUT: another place for it all
mkdir -p "$out"

smoke=0 many_only=0 large_only=0
[ "${1:-}" = "--smoke" ] && smoke=1
[ "${1:-}" = "--many" ] && many_only=1
[ "${1:-}" = "--large" ] && large_only=1
many_counts=${MCPC_BENCH_MANY:-10 100 1000} # how many clients at once, each count a run
large_sizes=${MCPC_BENCH_LARGE_MIB:-1 16 64} # the sizes of the large results, in MiB
if [ $smoke = 1 ]; then
  iterations=20 seconds=0.05 cancels=5 rounds=1 many_counts=10 large_sizes=1
else
  iterations=${MCPC_BENCH_ITERATIONS:-3000} seconds=${MCPC_BENCH_SECONDS:-1.5}
  cancels=${MCPC_BENCH_CANCELS:-1000} rounds=${MCPC_BENCH_ROUNDS:-3}
fi
[ $many_only = 1 ] && rounds=0 large_sizes=""
[ $large_only = 1 ] && rounds=0 many_counts=""

echo "== building mcpc and the test server (release)" >&2
cargo build --release --quiet
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
server="$target/release/mcpc-test-server"

echo "== building the C harness and the floor" >&2
cflags=(-O2 -g -Wall -Wextra -Werror -std=c11)
cc "${cflags[@]}" -I include -o "$out/bench" bench/bench.c "$target/release/libmcpc.a" \
  -lpthread -ldl -lm
cc "${cflags[@]}" -o "$out/floor" bench/floor.c -lpthread
cc "${cflags[@]}" -I include -o "$out/many_clients" bench/many_clients.c \
  "$target/release/libmcpc.a" -lpthread -ldl -lm
cc "${cflags[@]}" -I include -o "$out/large_results" bench/large_results.c \
  "$target/release/libmcpc.a" -lpthread -ldl -lm
cc "${cflags[@]}" -o "$out/echo_server" bench/echo_server.c
echo_server="$out/echo_server"
# What each way of waiting for a pipe's answer costs (CHANGELOG.md's eighth benchmark pass): run
# by hand, pinned; the smoke run only proves it still builds and runs.
cc "${cflags[@]}" -o "$out/wait_cost" bench/wait_cost.c
[ $smoke = 1 ] && "$out/wait_cost" 20 >&2

results="$out/results.txt"
: >"$results"
tag="" # appended to every result line: which server, mode and round it came from
run() { # run a case; its output goes to the results
  echo "== $tag: $*" >&2
  "${pin[@]}" "$@" | sed "s/\$/ $tag/" | tee -a "$results" >&2
}

peer_missing() { # impl, why
  echo "impl=$1 error=$2" >>"$results"
  echo "warning: $1 not run: $2" >&2
  [ "${MCPC_BENCH_REQUIRE_PEERS:-0}" = 1 ] && exit 1
  return 0
}

modes=(unpinned pinned)
if ! command -v taskset >/dev/null; then
  echo "mode=pinned error=taskset is not installed" >>"$results"
  echo "warning: no taskset: the pinned mode is not run" >&2
  modes=(unpinned)
fi

rmcp="" ts="" python=""
peers=" ${MCPC_BENCH_PEERS-rmcp ts python} " # which peers run (a quick run may name fewer)
if [ $smoke = 1 ] || [ $large_only = 1 ]; then peers=""; fi
[ $many_only = 1 ] && peers=${peers/ ts / } && peers=${peers/ python / }
if [[ $peers == *" rmcp "* ]]; then
  # rmcp: a driver crate of its own, never part of the mcpc workspace or package.
  echo "== building the rmcp driver" >&2
  if CARGO_TARGET_DIR="$out/rmcp-target" cargo build --release --quiet \
    --manifest-path bench/rmcp-driver/Cargo.toml; then
    rmcp="$out/rmcp-target/release/mcpc-bench-rmcp"
  else
    peer_missing rmcp "the driver crate did not build"
  fi
fi
if [[ $peers == *" ts "* ]]; then
  echo "== installing the TypeScript SDK" >&2
  sdk="$out/node/node_modules/@modelcontextprotocol/sdk/package.json"
  if [ -f "$sdk" ] || { command -v npm >/dev/null && mkdir -p "$out/node" \
    && (cd "$out/node" && { [ -f package.json ] || npm init -y >/dev/null; } \
      && npm install --silent --no-audit --no-fund "@modelcontextprotocol/sdk@1.32.2" >/dev/null); }; then
    cp bench/peer_ts.mjs "$out/node/"
    ts="$out/node/peer_ts.mjs"
  else
    peer_missing ts "npm could not install @modelcontextprotocol/sdk"
  fi
fi
if [[ $peers == *" python "* ]]; then
  echo "== installing Python mcp 2.3.0" >&2
  if bash scripts/install-peers.sh >&2; then
    python="$root/.cache/peers/venv/bin/python"
  else
    peer_missing python "scripts/install-peers.sh failed"
  fi
fi

# Rounds interleave every client and both modes, so that a slow stretch of the machine hits
# them alike; the table takes each figure's median over the rounds. Cancellation, cost and
# connect (each already a distribution of many samples) run in the first round only.
for round in $(seq 1 "$rounds"); do
  for mode in "${modes[@]}"; do
    pin=()
    [ "$mode" = pinned ] && pin=(taskset -c 0)
    sections=stdio,modern,http
    [ "$round" = 1 ] && sections=stdio,modern,http,cancel,cost,connect

    tag="server=test mode=$mode round=$round"
    run "$out/floor" stdio "$server" "$iterations" "$seconds"
    run "$out/floor" stdio-modern "$server" "$iterations" "$seconds"
    run "$out/floor" http "$server" "$iterations" "$seconds"
    MCPC_BENCH_SECTIONS=$sections run "$out/bench" "$server" "$iterations" "$seconds" "$cancels"
    [ -z "$rmcp" ] || run "$rmcp" "$server" "$iterations" "$seconds"
    [ -z "$ts" ] || run node "$ts" "$server" "$iterations" "$seconds"
    [ -z "$python" ] || run "$python" bench/peer_python.py "$server" "$iterations" "$seconds"

    tag="server=echo mode=$mode round=$round"
    run "$out/floor" stdio "$echo_server" "$iterations" "$seconds"
    MCPC_BENCH_SECTIONS=stdio run "$out/bench" "$echo_server" "$iterations" "$seconds" "$cancels"
    [ -z "$rmcp" ] || run "$rmcp" "$echo_server" "$iterations" "$seconds"
    [ -z "$ts" ] || MCPC_BENCH_STDIO_ONLY=1 run node "$ts" "$echo_server" "$iterations" "$seconds"
    [ -z "$python" ] || MCPC_BENCH_STDIO_ONLY=1 \
      run "$python" bench/peer_python.py "$echo_server" "$iterations" "$seconds"
  done
done

# Many idle clients in one process (issue 33), after the rounds, once and unpinned: a thousand
# server processes on one core would measure the scheduler. mcpc and rmcp alternate at each N
# against the same minimal server; HTTP is mcpc's alone, one test server for all its clients.
pin=()
for n in $many_counts; do
  tag="server=echo mode=unpinned round=1"
  run "$out/many_clients" stdio "$echo_server" "$n"
  run "$out/many_clients" stdio-bg "$echo_server" "$n"
  [ -z "$rmcp" ] || run "$rmcp" many "$echo_server" "$n"
  tag="server=test mode=unpinned round=1"
  run "$out/many_clients" http-legacy "$server" "$n"
  run "$out/many_clients" http-modern "$server" "$n"
  run "$out/many_clients" http-modern-waiting "$server" "$n"
  run "$out/many_clients" http-sse "$server" "$n"
done

# The peak memory of one large result (issue 36), once and unpinned: one process per transport
# and size, so that no call inherits another's buffers.
tag="server=test mode=unpinned round=1"
for mib in $large_sizes; do
  for transport in stdio http-legacy http-json http-modern; do
    run "$out/large_results" "$transport" "$server" "$mib"
  done
done

echo >&2
python3 bench/table.py "$results"
