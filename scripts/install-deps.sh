#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks for the tests: cmake (for the C examples and ctest),
# pkg-config, g++ and clang (the packaging and header-as-module tests), Go (the Go bindings),
# valgrind (the stress tests under memcheck), openssl (the certificate of the TLS test) and
# doxygen (the API reference, scripts/api-docs.sh),
# abigail-tools (abidw and abidiff: the ABI baseline, scripts/abi.sh);
# for the Windows checks mingw-w64 (the cross compiler) and Wine (64-bit), and the Rust targets
# for Windows and both macOS architectures (scripts/windows-checks.sh, scripts/macos-checks.sh).
# Rust (with rustup), gcc and python3 are expected to be there already. Safe to run again: it
# skips what exists.
set -euo pipefail

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v c++ >/dev/null 2>&1 || missing+=(g++)
command -v clang >/dev/null 2>&1 || missing+=(clang)
command -v go >/dev/null 2>&1 || missing+=(golang-go) # 1.19 on Debian 12: enough for bindings/go
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v doxygen >/dev/null 2>&1 || missing+=(doxygen)
command -v abidw >/dev/null 2>&1 || missing+=(abigail-tools)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing+=(mingw-w64)
command -v wine >/dev/null 2>&1 || missing+=(wine64 wine)

# The Rust targets (standard libraries only; a no-op when installed).
rustup target add x86_64-pc-windows-gnu x86_64-apple-darwin aarch64-apple-darwin >/dev/null

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
