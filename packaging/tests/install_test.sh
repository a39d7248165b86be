#!/bin/sh
# install_test.sh MODE BUILD_DIR SCRATCH VERSION SONAME
#
# Installs the library from BUILD_DIR into SCRATCH/prefix, checks the installed files, then
# builds tests/consumer out of tree against it, found with MODE (pkg-config or find_package),
# and runs the programs: they must load the library by its soname from the prefix.
# Environment: CMAKE and CC, the build's cmake and C compiler.
set -eu
mode=$1 build=$2 scratch=$3 version=$4 soname=$5
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

fresh "$scratch"
prefix="$scratch/prefix"
"$CMAKE" --install "$build" --prefix "$prefix" >"$scratch/install.log"

# The files, and the soname links: libmcpc.so -> libmcpc.so.X -> libmcpc.so.X.Y.Z.
libdir="$(dirname "$(find "$prefix" -name "libmcpc.so.$version")")"
[ -f "$libdir/libmcpc.so.$version" ] || fail "no libmcpc.so.$version under $prefix"
[ "$(readlink "$libdir/$soname")" = "libmcpc.so.$version" ] || fail "$soname is not a link to libmcpc.so.$version"
[ "$(readlink "$libdir/libmcpc.so")" = "$soname" ] || fail "libmcpc.so is not a link to $soname"
[ -f "$libdir/libmcpc.a" ] || fail "no libmcpc.a"
[ -f "$prefix/include/mcpc.h" ] || fail "no include/mcpc.h"
readelf -d "$libdir/libmcpc.so.$version" | grep -q "(SONAME).*\[$soname\]" || fail "the library's soname is not $soname"
echo "installed into $prefix: $(cd "$prefix" && find . ! -type d | sort | tr '\n' ' ')"

out="$scratch/out"
mkdir -p "$out"
case "$mode" in
pkg-config)
  require pkg-config
  export PKG_CONFIG_PATH="$libdir/pkgconfig"
  [ "$(pkg-config --modversion mcpc)" = "$version" ] || fail "pkg-config --modversion mcpc: $(pkg-config --modversion mcpc)"
  cflags="$(pkg-config --cflags mcpc)" libs="$(pkg-config --libs mcpc)"
  echo "pkg-config: $cflags $libs"
  # shellcheck disable=SC2086 # the flags are words
  "$CC" -std=c11 -Wall -Wextra -Werror $cflags "$here/consumer/consumer.c" $libs -o "$out/consumer_c"
  # The README's line: the prefix's libdir on the RPATH, so it starts with no environment.
  pc_libdir="$(pkg-config --variable=libdir mcpc)" # the same directory, spelt relative to the .pc
  # shellcheck disable=SC2086
  "$CC" -std=c11 $cflags "$here/consumer/consumer.c" $libs -Wl,-rpath,"$pc_libdir" \
    -o "$out/consumer_rpath"
  check_loads "$out/consumer_rpath" "$pc_libdir" "$soname"
  env -u LD_LIBRARY_PATH "$out/consumer_rpath" || fail "consumer_rpath failed"
  # Without it nothing on the program says where the library is: it cannot start (the
  # README's note) unless LD_LIBRARY_PATH names the prefix, as for a library in a system
  # directory.
  if env -u LD_LIBRARY_PATH "$out/consumer_c" 2>"$scratch/no_rpath.err"; then
    fail "consumer_c started without an rpath or LD_LIBRARY_PATH"
  fi
  grep -q "$soname" "$scratch/no_rpath.err" || fail "unexpected failure: $(cat "$scratch/no_rpath.err")"
  LD_LIBRARY_PATH="$libdir"
  export LD_LIBRARY_PATH
  programs=consumer_c
  ;;
find_package)
  "$CMAKE" -S "$here/consumer" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$CC" >"$scratch/configure.log" || { cat "$scratch/configure.log"; fail "configure"; }
  "$CMAKE" --build "$scratch/build" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; fail "build"; }
  # CMake puts the prefix's lib directory on the programs' build RPATH.
  for program in consumer_c consumer_cxx consumer_static; do
    cp "$scratch/build/$program" "$out/"
  done
  programs="consumer_c consumer_cxx"
  # The static program needs no libmcpc at run time.
  if readelf -d "$out/consumer_static" | grep -q "NEEDED.*libmcpc"; then
    fail "consumer_static loads libmcpc"
  fi
  "$out/consumer_static" || fail "consumer_static failed"
  ;;
*)
  fail "unknown mode $mode"
  ;;
esac

for program in $programs; do
  check_loads "$out/$program" "$libdir" "$soname"
  "$out/$program" || fail "$program failed"
done
echo "PASS: $mode"
