#!/bin/sh
# header_test.sh INCLUDE_DIR LIBRARY RUNTIME_DIR SCRATCH
#
# The header compiles on its own, warning-free and pedantic, as C11 and as C++17, and a
# program using it links and runs from both languages (in C++ that needs its extern "C").
# RUNTIME_DIR holds the soname link to LIBRARY. Environment: CC, and CXX (default c++).
set -eu
include=$1 library=$2 runtime=$3 scratch=$4
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

cxx="${CXX:-c++}"
require "$CC"
require "$cxx"
fresh "$scratch"

# Only the header: nothing included before it.
cat >"$scratch/only_header.c" <<'SRC'
#include "mcpc.h"
SRC
cp "$scratch/only_header.c" "$scratch/only_header.cpp"
"$CC" -std=c11 -Wall -Wextra -Werror -pedantic -I"$include" -c "$scratch/only_header.c" -o "$scratch/only_header_c.o"
"$cxx" -std=c++17 -Wall -Wextra -Werror -pedantic -I"$include" -c "$scratch/only_header.cpp" -o "$scratch/only_header_cxx.o"

# And used, linked and run from both.
cat >"$scratch/use.c" <<'SRC'
#include "mcpc.h"
#include <string.h>
int main(void) {
    mcp_request_options *options = mcp_request_options_new();
    mcp_status status = mcp_request_options_set_timeout_ms(options, 1000);
    mcp_request_options_free(options);
    return status == MCP_STATUS_OK && strcmp(mcp_version(), MCPC_VERSION) == 0 ? 0 : 1;
}
SRC
cp "$scratch/use.c" "$scratch/use.cpp"
"$CC" -std=c11 -Wall -Wextra -Werror -pedantic -I"$include" "$scratch/use.c" "$library" \
  -Wl,-rpath,"$runtime" -o "$scratch/use_c"
"$cxx" -std=c++17 -Wall -Wextra -Werror -pedantic -I"$include" "$scratch/use.cpp" "$library" \
  -Wl,-rpath,"$runtime" -o "$scratch/use_cxx"
"$scratch/use_c" || fail "the C program failed"
"$scratch/use_cxx" || fail "the C++ program failed"
echo "PASS: mcpc.h as C11 and C++17"
