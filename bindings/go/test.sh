#!/usr/bin/env bash
# Checks and tests the Go bindings: gofmt, go vet, then go test -race against the project's
# test server. Builds the library and the test server with cargo first (a no-op when fresh).
#
# The package links -lmcpc from the linker's path; here that is build/go/lib, which holds
# links to cargo's libmcpc.so under both its own name and its soname (libmcpc.so.MAJOR, the
# name the test binaries ask the loader for), on the binaries' rpath.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

cargo build --release --quiet
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
lib="$repo/build/go/lib"
mkdir -p "$lib"
ln -sf "$target/release/libmcpc.so" "$lib/libmcpc.so"
soname="$(readelf -d "$target/release/libmcpc.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
ln -sf "$target/release/libmcpc.so" "$lib/${soname:-libmcpc.so.0}"

export CGO_ENABLED=1
export CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib"
export MCPC_TEST_SERVER="$target/release/mcpc-test-server"
# No module downloads: the module has no dependencies, and a newer go must not fetch a
# toolchain.
export GOPROXY=off GOTOOLCHAIN=local

cd "$here"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
go test -race -count=1 "$@" ./...
