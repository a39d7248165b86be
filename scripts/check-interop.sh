#!/usr/bin/env bash
# Fails when the committed docs/interop.md is not what this run's interop matrix wrote to
# build/interop.md (scripts/test.sh runs the matrix with MCPC_INTEROP_MATRIX_OUT set), so the
# page cannot go stale. scripts/interop-matrix.sh rewrites the committed copy.
#   scripts/check-interop.sh [RUN_OUTPUT] [COMMITTED]
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-build/interop.md}
committed=${2:-docs/interop.md}
if [ ! -f "$run" ]; then
  echo "check-interop: $run was not written: the interop matrix did not run" >&2
  exit 1
fi
if ! diff -u "$committed" "$run"; then
  echo "check-interop: $committed is stale: this run's matrix differs (above);" \
    "run scripts/interop-matrix.sh and commit docs/interop.md" >&2
  exit 1
fi
echo "check-interop: $committed matches this run's matrix"
