#!/bin/sh
# header_test.sh INCLUDE_DIR LIBRARY RUNTIME_DIR SCRATCH
#
# The header compiles on its own, warning-free and pedantic, as C11 and as C++17, and a
# program using it links and runs from both languages (in C++ that needs its extern "C"); its
# version macros agree with each other and with mcp_version(); MCPC_DEPRECATED warns.
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

# The version macros: MCPC_VERSION_NUM is 0xMMmmpp of the parts, MCPC_AT_LEAST_VERSION compares
# with it in the preprocessor and in code, and the library's mcp_version() is the header's.
cat >"$scratch/version.c" <<'SRC'
#include "mcpc.h"
#include <stdio.h>
#include <string.h>
#if !MCPC_AT_LEAST_VERSION(MCPC_VERSION_MAJOR, MCPC_VERSION_MINOR, MCPC_VERSION_PATCH)
#error "MCPC_AT_LEAST_VERSION is false for the header's own version"
#endif
#if MCPC_AT_LEAST_VERSION(MCPC_VERSION_MAJOR, MCPC_VERSION_MINOR, MCPC_VERSION_PATCH + 1)
#error "MCPC_AT_LEAST_VERSION is true for a later patch"
#endif
#if MCPC_AT_LEAST_VERSION(MCPC_VERSION_MAJOR, MCPC_VERSION_MINOR + 1, 0)
#error "MCPC_AT_LEAST_VERSION is true for the next minor"
#endif
#if MCPC_VERSION_NUM != ((MCPC_VERSION_MAJOR << 16) | (MCPC_VERSION_MINOR << 8) | MCPC_VERSION_PATCH)
#error "MCPC_VERSION_NUM is not 0xMMmmpp"
#endif
int main(void) {
    char parts[32];
    snprintf(parts, sizeof parts, "%d.%d.%d", MCPC_VERSION_MAJOR, MCPC_VERSION_MINOR, MCPC_VERSION_PATCH);
    if (strcmp(parts, MCPC_VERSION) != 0 || strcmp(mcp_version(), MCPC_VERSION) != 0) {
        fprintf(stderr, "header %s (%s), library %s\n", MCPC_VERSION, parts, mcp_version());
        return 1;
    }
    return MCPC_AT_LEAST_VERSION(0, 0, 0) && !MCPC_AT_LEAST_VERSION(MCPC_VERSION_MAJOR + 1, 0, 0) ? 0 : 1;
}
SRC
"$CC" -std=c11 -Wall -Wextra -Werror -pedantic -I"$include" "$scratch/version.c" "$library" \
  -Wl,-rpath,"$runtime" -o "$scratch/version"
"$scratch/version" || fail "the header's version macros and mcp_version() disagree"

# MCPC_DEPRECATED, placed as cbindgen places it (after MCPC_API), warns with its note where the
# function is used, in C and in C++.
cat >"$scratch/deprecated.c" <<'SRC'
#include "mcpc.h"
MCPC_API MCPC_DEPRECATED("use mcp_version instead") const char *mcpc_old_version(void);
const char *mcpc_old_version(void) { return MCPC_VERSION; }
int main(void) { return mcpc_old_version()[0] == '\0'; }
SRC
cp "$scratch/deprecated.c" "$scratch/deprecated.cpp"
for compiler in "$CC -std=c11" "$cxx -std=c++17"; do
  source="$scratch/deprecated.c"
  case "$compiler" in "$cxx"*) source="$scratch/deprecated.cpp" ;; esac
  # shellcheck disable=SC2086 # the compiler and its standard are two words
  if $compiler -Wall -Werror -I"$include" -c "$source" -o "$scratch/deprecated.o" 2>"$scratch/deprecated.err"; then
    fail "$compiler: a call of an MCPC_DEPRECATED function compiled without a warning"
  fi
  grep -q "use mcp_version instead" "$scratch/deprecated.err" ||
    fail "$compiler: the deprecation warning lacks its note: $(cat "$scratch/deprecated.err")"
done
echo "PASS: mcpc.h as C11 and C++17; its version macros; MCPC_DEPRECATED"
