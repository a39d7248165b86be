#!/bin/sh
# dist_test.sh [ARCHIVE]
#
# The release archive (scripts/dist.sh; default dist/mcpc-VERSION-linux-ARCH.tar.gz) unpacked
# into a fresh prefix holds what it should, and programs build against it and run with no Rust
# toolchain on the PATH: a C program found through pkg-config, and C and C++ programs through
# find_package(mcpc) (shared and static). Each connects to mcpc-test-server and calls a tool.
# Output under build/dist-test/.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
. "$here/lib.sh"

version="$(sed -n 's/^version = "\([0-9.]*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)"
major="${version%%.*}"
name="mcpc-$version-linux-$(uname -m)"
archive="${1:-$repo/dist/$name.tar.gz}"
[ -f "$archive" ] || fail "no $archive: run scripts/dist.sh"

# The test server is the one thing built with Rust, before the toolchain leaves the PATH.
(cd "$repo" && cargo build --release -p mcpc-test-server --quiet)
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
case "$target_dir" in /*) ;; *) target_dir="$repo/$target_dir" ;; esac
server="$target_dir/release/mcpc-test-server"

scratch="$repo/build/dist-test"
fresh "$scratch"
prefix="$scratch/prefix"
mkdir -p "$prefix"
tar -xzf "$archive" -C "$prefix" --strip-components=1

# From here on, only the system's tools: no cargo, no rustc.
PATH=/usr/bin:/bin
export PATH
unset CARGO_HOME RUSTUP_HOME RUSTUP_TOOLCHAIN
for tool in cargo rustc rustup; do
  if command -v "$tool" >/dev/null 2>&1; then
    fail "$tool is on PATH=$PATH: the archive's consumers must build without Rust"
  fi
done
require cc
require c++
require cmake
require pkg-config

# What is in it: the library under its full version with the soname's two links, the static
# library, the header, the package files, the licences and the release notes.
libdir="$prefix/lib"
soname="libmcpc.so.$major"
[ -f "$libdir/libmcpc.so.$version" ] || fail "no lib/libmcpc.so.$version"
[ "$(readlink "$libdir/$soname")" = "libmcpc.so.$version" ] || fail "lib/$soname is not a link to libmcpc.so.$version"
[ "$(readlink "$libdir/libmcpc.so")" = "$soname" ] || fail "lib/libmcpc.so is not a link to $soname"
readelf -d "$libdir/libmcpc.so.$version" | grep -q "(SONAME).*\[$soname\]" || fail "the library's soname is not $soname"
for file in lib/libmcpc.a include/mcpc.h lib/pkgconfig/mcpc.pc lib/cmake/mcpc/mcpcConfig.cmake \
  lib/cmake/mcpc/mcpcConfigVersion.cmake LICENSE-MIT LICENSE-APACHE README.md CHANGELOG.md SECURITY.md; do
  [ -f "$prefix/$file" ] || fail "the archive has no $file"
done
# Relocatable: no path of the machine that built it.
if grep -rl "$repo" "$prefix/lib/pkgconfig" "$prefix/lib/cmake" >/dev/null 2>&1; then
  fail "the package files name the build's directory $repo"
fi
echo "archive: $(cd "$prefix" && find . ! -type d | sort | tr '\n' ' ')"

# A C program through pkg-config, with the prefix's lib directory on its RPATH.
out="$scratch/out"
mkdir -p "$out"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion mcpc)" = "$version" ] || fail "pkg-config --modversion mcpc: $(pkg-config --modversion mcpc)"
# shellcheck disable=SC2046 # the flags are words
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags mcpc) "$here/consumer/consumer.c" \
  $(pkg-config --libs mcpc) -Wl,-rpath,"$(pkg-config --variable=libdir mcpc)" -o "$out/consumer_pkg_config"
check_loads "$out/consumer_pkg_config" "$(pkg-config --variable=libdir mcpc)" "$soname"
env -u LD_LIBRARY_PATH "$out/consumer_pkg_config" "$server" >"$out/consumer_pkg_config.out" 2>&1 ||
  { cat "$out/consumer_pkg_config.out"; fail "the pkg-config program failed"; }
grep -q '"hello from C"' "$out/consumer_pkg_config.out" || fail "the pkg-config program made no call"

# C++ (and C, and the static library) through find_package(mcpc).
cmake -S "$here/consumer" -B "$scratch/cmake" -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/configure.log" 2>&1 ||
  { cat "$scratch/configure.log"; fail "find_package: configure"; }
cmake --build "$scratch/cmake" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; fail "find_package: build"; }
for program in consumer_cxx consumer_c consumer_static; do
  if [ "$program" = consumer_static ]; then
    if readelf -d "$scratch/cmake/$program" | grep -q "NEEDED.*libmcpc"; then
      fail "consumer_static loads libmcpc"
    fi
  else
    check_loads "$scratch/cmake/$program" "$libdir" "$soname"
  fi
  env -u LD_LIBRARY_PATH "$scratch/cmake/$program" "$server" >"$out/$program.out" 2>&1 ||
    { cat "$out/$program.out"; fail "find_package: $program failed"; }
  grep -q '"hello from C' "$out/$program.out" || fail "find_package: $program made no call"
done
echo "PASS: $(basename "$archive"): pkg-config (C) and find_package (C++, C, static) without Rust; each program called echo"
