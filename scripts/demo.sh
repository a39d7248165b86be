#!/usr/bin/env bash
# Builds the library and the test server, compiles the C cancel example against the static
# library, and runs it against the bundled test server: a worker thread blocks in a 10 s tool
# call, the main thread cancels it, the worker returns CANCELLED at once, and the server's log
# shows the request followed by exactly one notifications/cancelled.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet
mkdir -p build/demo
cc -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -Iinclude examples-c/cancel.c target/release/libmcpc.a \
  -lpthread -ldl -lm -o build/demo/cancel
./build/demo/cancel target/release/mcpc-test-server
