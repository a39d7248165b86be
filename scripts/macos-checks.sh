#!/usr/bin/env bash
# The macOS checks of the test command (scripts/test.sh). There is no Mac here and no macOS
# linker or SDK, so nothing is linked or run: the library is compiled (cargo check) and linted
# (clippy -D warnings) for both macOS targets, so that every line of its code, with the cfg
# branches macOS takes, is type-checked on every run; and the test server too. The TLS feature
# is left out (--no-default-features): its ring dependency compiles C code, which needs the
# macOS SDK; HTTP itself is always built.
set -euo pipefail
cd "$(dirname "$0")/.."

for target in x86_64-apple-darwin aarch64-apple-darwin; do
    echo "== macos: $target: cargo check and clippy -D warnings (library, no default features; test server)"
    start=$SECONDS
    cargo check --lib --no-default-features --target "$target"
    cargo clippy --lib --no-default-features --target "$target" -- -D warnings
    # The library's own unit tests (the kqueue reactor's among them), type-checked, not run.
    cargo rustc --lib --no-default-features --profile check --target "$target" -- --test -D warnings
    cargo clippy -p mcpc-test-server --target "$target" -- -D warnings
    echo "macos: $target checked in $((SECONDS - start)) s"
done
