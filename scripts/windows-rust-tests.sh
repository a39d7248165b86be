#!/usr/bin/env bash
# Cross-builds the library, the test server and the portable Rust tests for Windows
# (x86_64-pc-windows-gnu, mingw-w64) and runs the tests under wine against the Windows build
# of the test server. Prints each test binary it runs and its result line; exits non-zero if
# any test fails. Needs: rustup target x86_64-pc-windows-gnu, x86_64-w64-mingw32-gcc, wine
# (scripts/test.sh calls this; the Debian packages are gcc-mingw-w64-x86-64 and wine).
#
# Usage: scripts/windows-rust-tests.sh [TEST_NAME...]   (default: the portable stdio tests)
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=x86_64-pc-windows-gnu
TESTS=("$@")
if [ ${#TESTS[@]} -eq 0 ]; then
    # The stdio tests that are portable; the others are unix-only or need peers/HTTP servers
    # this run does not start (see docs/guide/platforms.md).
    TESTS=(stdio_client cancellation windows_job http network connect_close cancel_latency callbacks custom_transport completion)
fi

# A wine prefix of our own, made once, so the run does not touch the user's ~/.wine.
export WINEPREFIX="${MCPC_WINEPREFIX:-$PWD/target/wine-prefix}"
export WINEDEBUG=-all
if [ ! -d "$WINEPREFIX/drive_c/windows/system32" ]; then
    echo "== making the wine prefix $WINEPREFIX"
    wineboot --init >/dev/null 2>&1 || true
    wineserver -w || true
fi
# wine 8 has no bcryptprimitives.dll, which Rust's std (1.78+) loads at start: a stand-in.
stub="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if [ ! -f "$stub" ] || [ scripts/wine/bcryptprimitives.c -nt "$stub" ]; then
    x86_64-w64-mingw32-gcc -O2 -shared -o "$stub" scripts/wine/bcryptprimitives.c \
        scripts/wine/bcryptprimitives.def -ladvapi32
fi

echo "== building for $TARGET: library, test server, tests (${TESTS[*]})"
cargo build --quiet --target "$TARGET" --lib
cargo build --quiet --target "$TARGET" -p mcpc-test-server
args=()
for t in "${TESTS[@]}"; do args+=(--test "$t"); done
# The JSON messages go to a file (to find the executables), so on a failed build the
# compiler's own errors are printed from it; without this they would never be seen.
if ! cargo test --no-run --quiet --target "$TARGET" "${args[@]}" --message-format=json \
    > "target/$TARGET/test-build.json"; then
    echo "== the Windows test build failed; the compiler said:"
    python3 -c 'import json,sys
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        print(line, end="")
        continue
    if m.get("reason") == "compiler-message" and m["message"]["level"] in ("error", "warning"):
        print(m["message"]["rendered"], end="")' "target/$TARGET/test-build.json" | head -200
    df -h . | tail -1
    exit 1
fi
mapfile -t exes < <(python3 -c 'import json,sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])' "target/$TARGET/test-build.json")

server_unix="target/$TARGET/debug/mcpc-test-server.exe"
MCPC_TEST_SERVER="$(winepath -w "$server_unix" 2>/dev/null)"
export MCPC_TEST_SERVER
ls "target/$TARGET/debug/mcpc.dll" "target/$TARGET/debug/libmcpc.dll.a" >/dev/null

failed=0
for exe in "${exes[@]}"; do
    echo "== wine $(basename "$exe")"
    if ! timeout 900 wine "$exe" --test-threads=2 2>&1 | tee "target/$TARGET/$(basename "$exe").log" \
        | grep -E '^test result|^test .* FAILED|^failures:|panicked'; then
        :
    fi
    grep -q '^test result: ok' "target/$TARGET/$(basename "$exe").log" || failed=1
done
wineserver -k 2>/dev/null || true
if [ "$failed" -ne 0 ]; then
    echo "== Windows Rust tests: FAILED (logs in target/$TARGET/*.log)"
    exit 1
fi
echo "== Windows Rust tests: all passed (${TESTS[*]})"
