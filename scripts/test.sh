#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (the header freshness check and the interop
# tests against real MCP servers among them), clippy, rustfmt, then the C examples under ctest,
# plain, with ASan/UBSan, with TSan and under valgrind, with the packaging and header tests, the
# fuzz targets for a bounded time, the benchmark smoke run, the Go and Swift bindings, then the Windows
# checks (cross-built with mingw-w64, run under Wine) and the macOS ones (compiled and linted for
# both macOS targets; nothing runs). Ends by writing
# build/reliability.md from this run's logs (scripts/update-reliability.sh copies it to docs/).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/install-peers.sh
bash scripts/install-conformance.sh
bash scripts/install-nightly.sh
# Every part must run: a missing peer server, tool or toolchain fails its test rather than
# skipping it (the interop tests, TLS, TSan, valgrind, fuzzing, the packaging tests).
export MCPC_REQUIRE_PEERS=1
# On a CI machine every build is a first build: incremental state would only fill the disk
# (about 1 GiB per target directory), and line tables are all the debug info a failing
# test's backtrace needs (full debug info is most of a debug build's size).
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
fi
# Where the tests record figures for the reliability report; logs of this run go beside it.
rm -rf build/report build/logs
mkdir -p build/report build/logs
export MCPC_REPORT_DIR="$PWD/build/report"

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --all-targets -- -D warnings

echo "== cargo test"
# The interop matrix writes its page here; the committed docs/interop.md must match it.
rm -f build/interop.md
MCPC_INTEROP_MATRIX_OUT="$PWD/build/interop.md" cargo test 2>&1 | tee build/logs/cargo-test.log
bash scripts/check-interop.sh

echo "== API reference: doxygen on include/mcpc.h (fails on an undocumented export)"
bash scripts/api-docs.sh

echo "== C examples under ctest (plain, ASan/UBSan, TSan, valgrind)"
tsan_args="$(bash scripts/build-tsan.sh)"
tsan_args="${tsan_args:--DMCPC_TSAN_LIB= -DMCPC_TSAN_RUNTIME=}" # none: stress_tsan fails
# shellcheck disable=SC2086 # two -D arguments, or none
cmake -S examples-c -B build/examples -DCMAKE_BUILD_TYPE=RelWithDebInfo $tsan_args >/dev/null
cmake --build build/examples -j2
ctest --test-dir build/examples --output-on-failure 2>&1 | tee build/logs/ctest.log

echo "== fuzz targets, 20 s each"
if ! bash scripts/fuzz.sh 20 >build/logs/fuzz.log 2>&1; then
  tail -n 60 build/logs/fuzz.log
  echo "fuzz: failed (a target crashed: the input is in fuzz/artifacts/; or it could not run)"
  exit 1
fi
grep -E "^(==|fuzz:)|Done [0-9]+ runs" build/logs/fuzz.log

echo "== benchmark harness smoke run (builds and runs every case; figures not checked)"
bash bench/run.sh --smoke >/dev/null

echo "== Go bindings: gofmt, go vet, go test -race"
bash bindings/go/test.sh 2>&1 | tee build/logs/go.log

echo "== Swift binding: swift test against the installed library (Debian 13's Swift in a chroot)"
bash bindings/swift/test.sh 2>&1 | tee build/logs/swift.log

# Under CI the fuzz and TSan builds and the Swift root are done with by now: their 4 GB go
# before the Windows builds, which come last, when the disk is fullest.
if [ -n "${CI:-}" ]; then
  rm -rf .cache/fuzz-target target/tsan build/swift
  bash scripts/install-swift.sh remove
fi
echo "== Windows: cross-built with mingw-w64, run under Wine ($(df -h --output=avail . | tail -1 | tr -d ' ') free on disk)"
bash scripts/windows-checks.sh 2>&1 | tee build/logs/windows-checks.log

echo "== macOS: cargo check and clippy for x86_64-apple-darwin and aarch64-apple-darwin"
bash scripts/macos-checks.sh 2>&1 | tee build/logs/macos-checks.log

python3 scripts/reliability-report.py
