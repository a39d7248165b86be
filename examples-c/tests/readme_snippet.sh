#!/bin/sh
# readme_snippet.sh DOC REPO CARGO_TARGET_DIR FILE [EXPECT]
#
# Runs one of the programs of the README or a guide page (DOC) as a reader would. In DOC a
# program is the fenced block after `<!-- snippet: FILE -->` (FILE: where the page says to save
# it, relative to the repository root), and the commands that build and run it are the ```sh
# block after `<!-- snippet-run: FILE -->`. In a scratch directory laid out like the repository (links to
# its include/ and bindings/ and to cargo's target/), the program is saved as FILE and the
# commands run with `sh -eu`, as written; `cargo` there is a no-op, since ctest's build
# already ran it. Then, for a cancel program (no EXPECT):
# - the program printed `CANCELLED: request N` for some N > 0, and exited 0;
# - the test server's log has the tools/call request N, then exactly one
#   notifications/cancelled, for request N (the cancel came after the request was sent);
# and for a program given EXPECT: it exited 0, printed a line containing EXPECT, and the
# server's log has its tools/call and no notifications/cancelled. Either way C and C++
# programs also compile warning-free with -Wall -Wextra -Werror -pedantic, and Go programs are
# gofmt-formatted.
# Before that, every ```c, ```cpp and ```go block of the README and of docs/guide/ must be a
# marked snippet, so none can drift untested. Exits 77 (skipped) when the language's compiler is missing, unless
# MCPC_REQUIRE_PEERS=1. Environment: CC, CXX (default c++).
set -u
readme=$1 repo=$2 target=$3 file=$4 expect=${5:-}
. "$(dirname "$0")/lib.sh"

# The fenced block after the marker line MARKER, without its fences; fails when absent.
extract() {
    awk -v marker="$1" '
        found == 0 && $0 == marker { found = 1; next }
        found == 1 { if ($0 ~ /^```[a-z]+$/) { found = 2; next } else exit 1 }
        found == 2 { if ($0 == "```") { found = 3; exit } print }
        END { exit found == 3 ? 0 : 1 }' "$readme"
}

# Every compiled-language block is marked, in every page that has programs.
for doc in "$repo/README.md" "$repo"/docs/guide/*.md; do
    unmarked=$(awk '/^```(c|cpp|go)$/ && prev !~ /^<!-- snippet: / { print NR ": " $0 } { prev = $0 }' "$doc")
    [ -z "$unmarked" ] || fail "$doc: blocks without a <!-- snippet: FILE --> marker: $unmarked"
done

case $file in
    *.c) tool=${CC:-cc} ;;
    *.cpp) tool=${CXX:-c++} ;;
    *.go) tool=go ;;
    *) echo "unknown language: $file"; exit 2 ;;
esac
if ! command -v "$tool" >/dev/null 2>&1; then
    [ "${MCPC_REQUIRE_PEERS:-}" = 1 ] && { echo "FAIL: $tool is required"; exit 1; }
    echo "SKIP: $tool is not installed"
    exit 77
fi

work=$scratch/repo
rm -rf "$work"
mkdir -p "$work/fakebin"
ln -s "$repo/include" "$work/include"
ln -s "$repo/bindings" "$work/bindings"
ln -s "$target" "$work/target"
printf '#!/bin/sh\nexit 0\n' >"$work/fakebin/cargo"
chmod +x "$work/fakebin/cargo"

extract "<!-- snippet: $file -->" >"$scratch/program" || { echo "FAIL: no snippet $file in $readme"; exit 1; }
extract "<!-- snippet-run: $file -->" >"$scratch/run.sh" || { echo "FAIL: no snippet-run $file in $readme"; exit 1; }
dest=$file
mkdir -p "$work/$(dirname "$dest")"
cp "$scratch/program" "$work/$dest"
show "$dest" "$work/$dest"
show "commands" "$scratch/run.sh"

# Strict checks: the README's command line need not carry the warning flags.
case $file in
    *.c) "$tool" -std=c11 -Wall -Wextra -Werror -pedantic -I"$repo/include" -fsyntax-only \
             "$work/$dest" || fail "the C snippet does not compile warning-free" ;;
    *.cpp) "$tool" -std=c++17 -Wall -Wextra -Werror -pedantic -I"$repo/include" -fsyntax-only \
             "$work/$dest" || fail "the C++ snippet does not compile warning-free" ;;
    *.go) [ -z "$(gofmt -l "$work/$dest")" ] || fail "the Go snippet is not gofmt-formatted" ;;
esac

log=$scratch/server.log out=$scratch/stdout err=$scratch/stderr
rm -f "$log"
# The test server appends what it reads to $MCPC_TEST_LOG; no offline Go may download.
(cd "$work" && PATH="$work/fakebin:$PATH" MCPC_TEST_LOG="$log" GOPROXY=off GOTOOLCHAIN=local \
    GOFLAGS= sh -eu "$scratch/run.sh") >"$out" 2>"$err"
code=$?
echo "exit code: $code"
show stdout "$out"
show stderr "$err"
show "server log" "$log"
echo "---"
[ "$code" -eq 0 ] || fail "the commands exited $code"
check_no_sanitizer_report "$err"

if [ -n "$expect" ]; then
    grep -qF -- "$expect" "$out" || fail "the program did not print '$expect'"
    grep -q '"method":"tools/call"' "$log" || fail "the server log has no tools/call"
    ! grep -q '"method":"notifications/cancelled"' "$log" || fail "the server log has a cancel"
    [ "$failures" -eq 0 ]
    exit
fi

id=$(sed -n 's/^CANCELLED: request \([1-9][0-9]*\).*/\1/p' "$out" | head -n 1)
if [ -z "$id" ]; then
    fail "the program did not print 'CANCELLED: request N'"
    exit 1
fi
request_line=$(grep -n '"method":"tools/call"' "$log" | grep "\"id\":$id[,}]" | cut -d: -f1)
cancels=$(grep -c '"method":"notifications/cancelled"' "$log")
cancel=$(grep -n '"method":"notifications/cancelled"' "$log" | head -n 1)
[ -n "$request_line" ] || fail "the server log has no tools/call with id $id"
[ "$cancels" -eq 1 ] || fail "the server log has $cancels notifications/cancelled lines, want 1"
if [ "$cancels" -ge 1 ]; then
    echo "$cancel" | grep -q "\"requestId\":$id[,}]" || fail "the notice does not name request $id"
    [ -z "$request_line" ] || [ "${cancel%%:*}" -gt "$request_line" ] ||
        fail "the server read the cancel before the request"
fi
[ "$failures" -eq 0 ]
