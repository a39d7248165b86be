#!/bin/sh
# subproject_test.sh [MODE...]
#
# The top-level CMakeLists.txt as a subproject: packaging/tests/subproject is configured, built
# and run with mcpc taken by add_subdirectory, by FetchContent from a local path and by
# FetchContent from this repository's git URL (file://, at HEAD). Each build runs cargo
# through mcpc's CMake; each program connects to mcpc-test-server and calls a tool, and the
# shared ones load libmcpc by its soname from the build tree. MODE: add_subdirectory,
# fetch_path, fetch_git (default: all three). Output under build/subproject/.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
. "$here/lib.sh"

require cmake
require c++
require git
modes="${*:-add_subdirectory fetch_path fetch_git}"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
case "$target_dir" in /*) ;; *) target_dir="$repo/$target_dir" ;; esac
(cd "$repo" && cargo build --release -p mcpc-test-server --quiet)
server="$target_dir/release/mcpc-test-server"
soname="libmcpc.so.$(sed -n 's/^version = "\([0-9]*\)\..*/\1/p' "$repo/Cargo.toml" | head -n 1)"

for mode in $modes; do
  scratch="$repo/build/subproject/$mode"
  fresh "$scratch"
  set -- -DMCPC_FROM="$mode" -DMCPC_SOURCE="$repo"
  if [ "$mode" = fetch_git ]; then
    # A clone builds in a cargo directory of its own: it must not replace the library that
    # this checkout's own target directory holds.
    set -- "$@" -DMCPC_GIT_URL="file://$repo" -DMCPC_GIT_TAG="$(git -C "$repo" rev-parse HEAD)" \
      -DMCPC_CARGO_TARGET_DIR="$scratch/cargo-target"
  else
    set -- "$@" -DMCPC_CARGO_TARGET_DIR="$target_dir"
  fi
  cmake -S "$here/subproject" -B "$scratch/build" "$@" >"$scratch/configure.log" 2>&1 ||
    { cat "$scratch/configure.log"; fail "$mode: configure"; }
  cmake --build "$scratch/build" >"$scratch/build.log" 2>&1 ||
    { tail -n 40 "$scratch/build.log"; fail "$mode: build"; }
  for program in consumer_c consumer_cxx; do
    readelf -d "$scratch/build/$program" | grep -q "(NEEDED).*\[$soname\]" ||
      fail "$mode: $program does not record $soname"
  done
  if readelf -d "$scratch/build/consumer_static" | grep -q "NEEDED.*libmcpc"; then
    fail "$mode: consumer_static loads libmcpc"
  fi
  for program in consumer_c consumer_cxx consumer_static; do
    env -u LD_LIBRARY_PATH "$scratch/build/$program" "$server" >"$scratch/$program.out" 2>&1 ||
      { cat "$scratch/$program.out"; fail "$mode: $program"; }
    grep -q '"hello from C' "$scratch/$program.out" || fail "$mode: $program made no call"
  done
  echo "PASS: $mode: mcpc::mcpc and mcpc::mcpc_static, built by cargo through CMake; each program called echo"
done
