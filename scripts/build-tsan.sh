#!/usr/bin/env bash
# Builds libmcpc.a under ThreadSanitizer for the stress_tsan ctest: nightly Rust with
# -Zsanitizer=thread, and -Zbuild-std so that the standard library's own atomics and locks are
# instrumented too (without that, TSan cannot see Rust's synchronisation and reports races that
# are not there). The C side is compiled with gcc -fsanitize=thread and linked against the TSan
# runtime that ships with that nightly, the one the Rust code was instrumented for.
#
# Prints the CMake arguments that turn the test on, or prints nothing (and a reason on stderr)
# when the pinned nightly with rust-src is missing (scripts/install-nightly.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

nightly="$(cat scripts/nightly-toolchain)"
if ! sysroot="$(rustup run "$nightly" rustc --print sysroot 2>/dev/null)" ||
   [ ! -d "$sysroot/lib/rustlib/src/rust/library" ]; then
  echo "build-tsan: skipped: Rust $nightly with rust-src is not installed" >&2
  exit 0
fi
host="$(rustup run "$nightly" rustc -vV | sed -n 's/^host: //p')"
runtime="$sysroot/lib/rustlib/$host/lib/librustc-nightly_rt.tsan.a"
if [ ! -f "$runtime" ]; then
  echo "build-tsan: skipped: $nightly has no TSan runtime for $host" >&2
  exit 0
fi

echo "== building libmcpc.a with ThreadSanitizer ($nightly)" >&2
RUSTFLAGS="-Zsanitizer=thread" cargo +"$nightly" build --quiet -Zbuild-std --target "$host" \
  --lib --release --target-dir target/tsan >&2
echo "-DMCPC_TSAN_LIB=$PWD/target/tsan/$host/release/libmcpc.a -DMCPC_TSAN_RUNTIME=$runtime"
