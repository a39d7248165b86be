#!/usr/bin/env bash
# Installs what the ThreadSanitizer stress test and the fuzz targets need beyond stable Rust: a
# pinned nightly toolchain with rust-src (for -Zsanitizer=thread with -Zbuild-std) and
# cargo-fuzz. Pinned, so that a new nightly cannot break CI overnight.
#
# Never fatal: when something cannot be installed (no network to static.rust-lang.org, say), it
# says so and exits 0; scripts/build-tsan.sh and scripts/fuzz.sh then skip, and the reliability
# report (docs/reliability.md) says they did not run.
set -uo pipefail

nightly="$(cat "$(dirname "$0")/nightly-toolchain")"
cargo_fuzz_version=0.13.2

if ! rustup run "$nightly" rustc --version >/dev/null 2>&1 ||
   [ ! -d "$(rustup run "$nightly" rustc --print sysroot 2>/dev/null)/lib/rustlib/src/rust/library" ]; then
  echo "installing Rust $nightly with rust-src"
  if ! rustup toolchain install "$nightly" --profile minimal --component rust-src; then
    echo "install-nightly: could not install $nightly: TSan and fuzzing will not run"
    exit 0
  fi
fi

if ! cargo fuzz --version 2>/dev/null | grep -q "$cargo_fuzz_version"; then
  echo "installing cargo-fuzz $cargo_fuzz_version"
  if ! cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked --quiet; then
    echo "install-nightly: could not install cargo-fuzz: fuzzing will not run"
  fi
fi
exit 0
