#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (the header freshness check and the interop
# tests against real MCP servers among them), clippy, rustfmt, then the C examples under ctest,
# plain and with ASan/UBSan, with the packaging and header tests, then the Go bindings.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/install-peers.sh
bash scripts/install-conformance.sh
# The interop tests fail, rather than skip, when a peer server is missing.
export MCPC_REQUIRE_PEERS=1

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --all-targets -- -D warnings

echo "== cargo test"
cargo test

echo "== C examples under ctest (plain and sanitized)"
cmake -S examples-c -B build/examples -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/examples -j2
ctest --test-dir build/examples --output-on-failure

echo "== benchmark harness smoke run (builds and runs every case; figures not checked)"
bash bench/run.sh --smoke >/dev/null

echo "== Go bindings: gofmt, go vet, go test -race"
bash bindings/go/test.sh
