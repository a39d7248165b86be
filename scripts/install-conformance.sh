#!/usr/bin/env bash
# Installs the official MCP conformance suite into .cache/conformance (or $MCPC_CONFORMANCE_DIR),
# all from the npm registry:
#   - Node 22 (node22/): the suite needs it, and the machine's Node may be older,
#   - @modelcontextprotocol/conformance 0.1.16 (v0.1/) for the 2025-11-25 scenarios,
#   - @modelcontextprotocol/conformance 0.2.0-alpha.12 (v0.2/) for the 2026-07-28 scenarios.
# Safe to run again: what is already installed is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${MCPC_CONFORMANCE_DIR:-$PWD/.cache/conformance}"
mkdir -p "$dir"
command -v npm >/dev/null 2>&1 || { echo "npm is required" >&2; exit 1; }

# npm_install FOLDER PACKAGE@VERSION: a private package.json per folder keeps them apart.
npm_install() {
  mkdir -p "$1"
  (cd "$1" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --silent --no-audit --no-fund "$2" >/dev/null)
}

if ! "$dir/node22/node_modules/.bin/node" --version 2>/dev/null | grep -q '^v22\.'; then
  echo "installing Node 22 into $dir/node22"
  npm_install "$dir/node22" "node@22"
fi
export PATH="$dir/node22/node_modules/.bin:$PATH"

for pair in "v0.1 0.1.16" "v0.2 0.2.0-alpha.12"; do
  set -- $pair
  if [ "$(cd "$dir/$1" 2>/dev/null && npx --no-install conformance --version 2>/dev/null)" != "$2" ]; then
    echo "installing @modelcontextprotocol/conformance@$2 into $dir/$1"
    npm_install "$dir/$1" "@modelcontextprotocol/conformance@$2"
  fi
done
echo "conformance suite ready in $dir"
