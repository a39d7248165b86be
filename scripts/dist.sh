#!/usr/bin/env bash
# Builds the release archive: dist/mcpc-VERSION-linux-ARCH.tar.gz (ARCH: uname -m, x86_64 on
# the build machine). It holds one directory, mcpc-VERSION-linux-ARCH/, laid out as an install
# prefix (the top-level CMakeLists.txt's `cmake --install`):
#
#   lib/libmcpc.so.X.Y.Z, lib/libmcpc.so.X and lib/libmcpc.so (links), lib/libmcpc.a
#   include/mcpc.h
#   lib/pkgconfig/mcpc.pc, lib/cmake/mcpc/mcpcConfig.cmake and mcpcConfigVersion.cmake
#   LICENSE-MIT, LICENSE-APACHE, README.md, CHANGELOG.md, SECURITY.md
#
# The pkg-config and CMake files find the prefix from where they are, so the directory can be
# unpacked anywhere. The archive is reproducible: sorted, owned by root, every file dated at
# the last commit (SOURCE_DATE_EPOCH when set). packaging/tests/dist_test.sh checks it.
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(sed -n 's/^version = "\([0-9.]*\)"$/\1/p' Cargo.toml | head -n 1)"
[ -n "$version" ] || { echo "dist: no version in Cargo.toml" >&2; exit 1; }
name="mcpc-$version-linux-$(uname -m)"
work=build/dist
root="$work/$name"

rm -rf "$work"
mkdir -p "$work" dist
cmake -S . -B "$work/cmake" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_LIBDIR=lib >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/cmake" >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; exit 1; }
cmake --install "$work/cmake" --prefix "$root" >"$work/install.log"
cp LICENSE-MIT LICENSE-APACHE README.md CHANGELOG.md SECURITY.md "$root/"

epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
archive="dist/$name.tar.gz"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
  -C "$work" -cf - "$name" | gzip -9n >"$archive"
echo "dist: $archive ($(du -k "$archive" | cut -f1) KiB):"
tar -tzf "$archive" | sed "s/^/  /"
