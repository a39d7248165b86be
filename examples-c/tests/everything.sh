#!/bin/sh
# everything.sh PEERS_DIR PROGRAM stdio|http
#
# Runs the `everything` example against @modelcontextprotocol/server-everything, over stdio or
# over Streamable HTTP (started here on a free port). Exits 77 (skipped) when the peer is not
# installed, unless MCPC_REQUIRE_PEERS is set, as scripts/test.sh does in CI.
set -u
. "$(dirname "$0")/lib.sh"
peers=$1 program=$2 transport=$3
server="$peers/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [ ! -f "$server" ]; then
    echo "server-everything is not installed in $peers (run scripts/install-peers.sh)"
    [ -n "${MCPC_REQUIRE_PEERS:-}" ] && exit 1
    exit 77
fi

if [ "$transport" = stdio ]; then
    exec "$program" --stdio node "$server" stdio
fi

# A free port: ask the kernel for one, then hand it to the server.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
PORT=$port node "$server" streamableHttp >"$scratch/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 1 100); do
    node -e "require('net').connect($port,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" && break
    sleep 0.1
done
"$program" --http "http://127.0.0.1:$port/mcp"
