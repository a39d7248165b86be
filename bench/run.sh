#!/usr/bin/env bash
# Builds mcpc, the test server, the C harness (bench.c), the floor (floor.c) and the peer drivers,
# runs every case against the project's test server, and prints one table with ratios.
#
#   bash bench/run.sh            the full run (a few minutes on 2 cores), peers included
#   bash bench/run.sh --smoke    a few iterations per case and no peers: proves it still builds
#                                and runs (scripts/test.sh calls this); its figures mean nothing
#
# Exits non-zero when a case fails to run, never because a figure is slow. A peer that cannot be
# installed is reported in the table as not run (MCPC_BENCH_REQUIRE_PEERS=1 makes that fatal).
# Everything built or installed goes under .cache/bench; the raw results are in
# .cache/bench/results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out="$root/.cache/bench"
mkdir -p "$out"

smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1
if [ $smoke = 1 ]; then
  iterations=20 seconds=0.05 cancels=5
else
  iterations=${MCPC_BENCH_ITERATIONS:-3000} seconds=${MCPC_BENCH_SECONDS:-1.5}
  cancels=${MCPC_BENCH_CANCELS:-1000}
fi

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

results="$out/results.txt"
: >"$results"
run() { # run a case; its output goes to the results
  echo "== $*" >&2
  "$@" | tee -a "$results" >&2
}

run "$out/floor" stdio "$server" "$iterations" "$seconds"
run "$out/floor" http "$server" "$iterations" "$seconds"
run "$out/bench" "$server" "$iterations" "$seconds" "$cancels"

peer_missing() { # impl, why
  echo "impl=$1 error=$2" >>"$results"
  echo "warning: $1 not run: $2" >&2
  [ "${MCPC_BENCH_REQUIRE_PEERS:-0}" = 1 ] && exit 1
  return 0
}

if [ $smoke = 0 ]; then
  # rmcp: a driver crate of its own, never part of the mcpc workspace or package.
  echo "== building the rmcp driver" >&2
  if CARGO_TARGET_DIR="$out/rmcp-target" cargo build --release --quiet \
    --manifest-path bench/rmcp-driver/Cargo.toml; then
    run "$out/rmcp-target/release/mcpc-bench-rmcp" "$server" "$iterations" "$seconds"
  else
    peer_missing rmcp "the driver crate did not build"
  fi

  echo "== installing the TypeScript SDK" >&2
  sdk="$out/node/node_modules/@modelcontextprotocol/sdk/package.json"
  if [ -f "$sdk" ] || { command -v npm >/dev/null && mkdir -p "$out/node" \
    && (cd "$out/node" && { [ -f package.json ] || npm init -y >/dev/null; } \
      && npm install --silent --no-audit --no-fund "@modelcontextprotocol/sdk@1.32.2" >/dev/null); }; then
    cp bench/peer_ts.mjs "$out/node/"
    run node "$out/node/peer_ts.mjs" "$server" "$iterations" "$seconds"
  else
    peer_missing ts "npm could not install @modelcontextprotocol/sdk"
  fi

  echo "== installing Python mcp 2.3.0" >&2
  if bash scripts/install-peers.sh >&2; then
    run "$root/.cache/peers/venv/bin/python" bench/peer_python.py "$server" "$iterations" "$seconds"
  else
    peer_missing python "scripts/install-peers.sh failed"
  fi
fi

echo >&2
python3 bench/table.py "$results"
