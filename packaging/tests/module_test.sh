#!/bin/sh
# module_test.sh INCLUDE_DIR LIBRARY RUNTIME_DIR SCRATCH
#
# include/module.modulemap makes mcpc.h the Clang module `mcpc`, which is how Swift imports
# a C library: a file that does `@import mcpc;` compiles with -fmodules, links and runs.
# Environment: CLANG (default clang).
set -eu
include=$1 library=$2 runtime=$3 scratch=$4
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

clang="${CLANG:-clang}"
require "$clang"
fresh "$scratch"

cat >"$scratch/import.m" <<'SRC'
@import mcpc;

int main(void) {
    mcp_cancellation *token = mcp_cancellation_new();
    bool first = mcp_cancellation_cancel(token, "module");
    mcp_cancellation_free(token);
    return first && mcp_version()[0] != '\0' ? 0 : 1;
}
SRC
"$clang" -x objective-c -fmodules -fmodule-map-file="$include/module.modulemap" \
  -fmodules-cache-path="$scratch/cache" -Wall -Wextra -Werror \
  -c "$scratch/import.m" -o "$scratch/import.o"
"$clang" "$scratch/import.o" "$library" -Wl,-rpath,"$runtime" -o "$scratch/import"
"$scratch/import" || fail "the program importing the module failed"

# The Swift package's system-library module (bindings/swift), which reaches the same header
# through a shim; here the include directory stands in for pkg-config's.
printf '@import CMcpc;\nint main(void) { return mcp_version()[0] ? 0 : 1; }\n' >"$scratch/swift.m"
"$clang" -x objective-c -fmodules -I"$include" -Wall -Wextra -Werror \
  -fmodule-map-file="$here/../../bindings/swift/Sources/CMcpc/module.modulemap" \
  -fmodules-cache-path="$scratch/cache" -c "$scratch/swift.m" -o "$scratch/swift.o"
echo "PASS: @import mcpc, @import CMcpc"
