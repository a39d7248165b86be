#!/usr/bin/env bash
# Runs the interop matrix (tests/interop_matrix.rs: Python `mcp` 2.3.0 and server-everything,
# over stdio, Streamable HTTP and HTTP+SSE, in each era they speak) and writes its table to
# docs/interop.md. Fails if any cell fails (the page is still written, showing which).
# scripts/test.sh writes the same page to build/interop.md and fails when docs/interop.md
# differs from it (scripts/check-interop.sh): run this to update the committed copy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-peers.sh
mkdir -p docs
MCPC_REQUIRE_PEERS=1 MCPC_INTEROP_MATRIX_OUT="$PWD/docs/interop.md" \
  cargo test --test interop_matrix -- --nocapture
echo "wrote docs/interop.md"
