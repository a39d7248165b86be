#!/usr/bin/env bash
# Builds and tests the Swift package against the library as installed (`cmake --install` into
# build/swift/prefix, found through its mcpc.pc, as a Swift user would), running its XCTest
# tests against the project's test server. Uses the machine's `swift` if it has one; else the
# Debian 13 root of scripts/install-swift.sh (made first if needed; root only).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

cargo build --release --quiet
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
build="$repo/build/swift"
mkdir -p "$build"
cmake -S . -B "$build/cmake" -DCMAKE_BUILD_TYPE=Release >"$build/cmake.log"
cmake --build "$build/cmake" -j2 >>"$build/cmake.log"
rm -rf "$build/prefix"
cmake --install "$build/cmake" --prefix "$build/prefix" >>"$build/cmake.log"
pc="$(dirname "$(find "$build/prefix" -name mcpc.pc)")"

export MCPC_TEST_SERVER="$target/release/mcpc-test-server"
export PKG_CONFIG_PATH="$pc"
# The installed library on the test binary's RPATH: it starts with no environment.
run=(swift test --package-path "$here" --scratch-path "$build/.build"
  -Xlinker -rpath -Xlinker "$(dirname "$pc")")
# A call that never returns hangs its test (XCTest has no time limit): the whole run gets one.
limit="${MCPC_SWIFT_TEST_LIMIT:-900}"
if command -v swift >/dev/null 2>&1; then
  status=0
  timeout --kill-after=10 "$limit" "${run[@]}" "$@" || status=$?
else
  bash scripts/install-swift.sh
  status=0
  MCPC_SWIFT_PASS="MCPC_TEST_SERVER PKG_CONFIG_PATH" \
    timeout --kill-after=10 "$limit" bash scripts/in-swift-root.sh "${run[@]}" "$@" || status=$?
fi
if [ "$status" = 124 ]; then
  echo "swift: the tests did not end within $limit s (a call that never returned?)" >&2
fi
exit "$status"
