#!/usr/bin/env bash
# Runs each fuzz target (fuzz/fuzz_targets) for a bounded time, starting from the committed
# seeds in fuzz/seeds. Needs the pinned nightly Rust (scripts/nightly-toolchain) and cargo-fuzz,
# which scripts/install-nightly.sh installs; without them it says so and skips, or fails when
# MCPC_REQUIRE_PEERS=1 (as under scripts/test.sh, where every part must run).
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 30)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-30}
nightly="$(cat ../scripts/nightly-toolchain)"

# skip REASON: says the targets did not run; a failure when every part is required.
skip() {
  if [ "${MCPC_REQUIRE_PEERS:-}" = 1 ]; then
    echo "fuzz: FAILED: $1 (MCPC_REQUIRE_PEERS=1: run scripts/install-nightly.sh)"
    exit 1
  fi
  echo "fuzz: skipped: $1"
  exit 0
}

if ! cargo +"$nightly" --version >/dev/null 2>&1; then
  skip "no $nightly Rust toolchain (cargo-fuzz needs nightly)"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  skip "cargo-fuzz is not installed (cargo install cargo-fuzz --locked)"
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/../.cache/fuzz-target}"
for target in sse frame header; do
  corpus="../.cache/fuzz-corpus/$target"
  mkdir -p "$corpus"
  echo "== fuzz $target for ${seconds}s"
  cargo +"$nightly" fuzz run "$target" "$corpus" "seeds/$target" -- -max_total_time="$seconds" -max_len=65536
done
