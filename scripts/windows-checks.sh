#!/usr/bin/env bash
# The Windows checks of the test command (scripts/test.sh), on Linux: cross-builds the library
# (mcpc.dll, libmcpc.dll.a, libmcpc.a), the test server and the C examples for
# x86_64-pc-windows-gnu with mingw-w64 (cmake/mingw-w64.cmake), then runs under Wine, against
# the Windows test server over stdio:
# - ctest in build/windows (examples-c/windows-tests.cmake): basic.c, cancel.c, progress.c and
#   mcp-call's echo, cancel of a slow call (exit 3), precancel (exit 3), timeout (exit 4),
#   progress, roots and error exits;
# - the install (cmake --install): the files, and a program built against it with pkg-config;
# - the C cancel program of docs/guide/cancellation.md, built with mingw-w64 and its POSIX
#   threads as written;
# - the Rust tests under Wine (scripts/windows-rust-tests.sh).
# Any failure fails the run. Timings go to stdout (and build/logs/ when scripts/test.sh runs).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
# shellcheck source=scripts/wine-env.sh
. scripts/wine-env.sh
build=build/windows
logs=build/logs
mkdir -p "$logs"

start=$SECONDS
mcpc_wine_init
echo "windows: wine prefix ready in $((SECONDS - start)) s ($(wine --version))"
# One wineserver for the whole run (each Wine process would otherwise start its own, and the
# tests' time bounds would pay for it); ended on exit, only for this prefix.
wineserver -p
trap 'wineserver -k 2>/dev/null || true' EXIT

echo "== windows: cross-build (mingw-w64, cargo --target x86_64-pc-windows-gnu)"
start=$SECONDS
cmake -S examples-c -B "$build" -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/mingw-w64.cmake" \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 >"$logs/windows-build.log" 2>&1 || {
    tail -n 60 "$logs/windows-build.log"
    echo "windows: the cross-build failed"
    exit 1
}
echo "windows: built in $((SECONDS - start)) s"
out=target/x86_64-pc-windows-gnu/release
server="$repo/$out/mcpc-test-server.exe"

echo "== windows: the C examples and mcp-call under Wine (ctest)"
ctest --test-dir "$build" --output-on-failure 2>&1 | tee "$logs/windows-ctest.log"

echo "== windows: install"
prefix="$repo/$build/prefix"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for file in bin/mcpc.dll lib/libmcpc.dll.a lib/libmcpc.a include/mcpc.h lib/pkgconfig/mcpc.pc \
    lib/cmake/mcpc/mcpcConfig.cmake lib/cmake/mcpc/mcpcConfigVersion.cmake; do
    [ -f "$prefix/$file" ] || { echo "windows: FAIL: $file is not installed"; exit 1; }
done
consumer="$repo/$build/consumer.exe"
# shellcheck disable=SC2046 # the flags are words
x86_64-w64-mingw32-gcc -std=c11 -Wall -Wextra -Werror packaging/tests/consumer/consumer.c \
    $(PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" pkg-config --cflags --libs mcpc) -o "$consumer"
# Windows finds a DLL on PATH (WINEPATH under Wine); the installed bin directory holds it.
WINEPATH="$(winepath -w "$prefix/bin")" scripts/windows/wine-run.sh "$consumer" ||
    { echo "windows: FAIL: the program built against the install did not run"; exit 1; }
echo "windows: installed $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"

echo "== windows: the guide's C cancel program (mingw-w64, POSIX threads from winpthreads)"
scratch="$repo/$build/readme"
rm -rf "$scratch" && mkdir -p "$scratch"
awk '$0 == "<!-- snippet: cancel.c -->" { found = 1; next }
     found == 1 && /^```c$/ { found = 2; next }
     found == 2 && /^```$/ { exit }
     found == 2 { print }' docs/guide/cancellation.md >"$scratch/cancel.c"
[ -s "$scratch/cancel.c" ] || { echo "windows: FAIL: no cancel.c snippet in docs/guide/cancellation.md"; exit 1; }
# As the guide builds it, with the Windows library (the import library of mcpc.dll) and
# winpthreads linked statically, so that the program needs only mcpc.dll beside it.
x86_64-w64-mingw32-gcc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude "$scratch/cancel.c" \
    "$out/libmcpc.dll.a" -static-libgcc -Wl,-Bstatic -lpthread -Wl,-Bdynamic \
    -o "$scratch/cancel.exe"
cp "$out/mcpc.dll" "$scratch/"
start=$(date +%s%N)
MCPC_TEST_LOG="$scratch/server.log" scripts/windows/wine-run.sh "$scratch/cancel.exe" "$server" \
    >"$scratch/stdout" 2>"$scratch/stderr" || { cat "$scratch/stdout" "$scratch/stderr"; exit 1; }
cat "$scratch/stdout"
grep -q '^CANCELLED: request [1-9][0-9]* (reason: user pressed cancel)$' "$scratch/stdout" ||
    { echo "windows: FAIL: the guide's program did not print CANCELLED"; exit 1; }
[ "$(grep -c '"method":"notifications/cancelled"' "$scratch/server.log")" -eq 1 ] ||
    { echo "windows: FAIL: the server's log has no single notifications/cancelled"; exit 1; }
echo "windows: the guide's program ran in $((($(date +%s%N) - start) / 1000000)) ms"

echo "== windows: the Rust tests under Wine"
start=$SECONDS
MCPC_WINEPREFIX="$WINEPREFIX" bash scripts/windows-rust-tests.sh
echo "windows: the Rust tests under Wine ran in $((SECONDS - start)) s"
