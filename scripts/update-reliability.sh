#!/usr/bin/env bash
# Copies the reliability report of the last test run (build/reliability.md, written by
# scripts/test.sh) to docs/reliability.md, the committed copy. The test run itself never
# rewrites a tracked file; run this on purpose after a run whose figures you mean to commit.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/reliability.md ]; then
  echo "no build/reliability.md: run scripts/test.sh first" >&2
  exit 1
fi
cp build/reliability.md docs/reliability.md
echo "docs/reliability.md updated from build/reliability.md ($(grep -m1 '^Run:' docs/reliability.md))"
