#!/usr/bin/env bash
# Installs the real MCP servers the interop tests talk to, into .cache/peers (or $MCPC_PEERS_DIR):
#   - Python `mcp` 2.3.0 in a virtualenv (venv/),
#   - `@modelcontextprotocol/server-everything` 2026.8.31 with the machine's Node (node/).
# Safe to run again: what is already installed is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
peers="${MCPC_PEERS_DIR:-$PWD/.cache/peers}"
mkdir -p "$peers"

if ! "$peers/venv/bin/python" -c 'import mcp.server.mcpserver' >/dev/null 2>&1; then
  echo "installing Python mcp 2.3.0 into $peers/venv"
  python3 -m venv "$peers/venv"
  "$peers/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==2.3.0"
fi

everything="$peers/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [ ! -f "$everything" ]; then
  echo "installing @modelcontextprotocol/server-everything 2026.8.31 into $peers/node"
  command -v npm >/dev/null 2>&1 || { echo "npm is required (Node 20 or newer)" >&2; exit 1; }
  mkdir -p "$peers/node"
  (cd "$peers/node" && [ -f package.json ] || npm init -y >/dev/null) 
  (cd "$peers/node" && npm install --silent --no-audit --no-fund "@modelcontextprotocol/server-everything@2026.8.31" >/dev/null)
fi
echo "peers ready in $peers"
