#!/bin/sh
# Runs one scenario of the official MCP conformance suite against a client program and passes
# only when the suite reports zero failures and zero warnings.
#
#   conformance.sh CACHE_DIR SUITE SPEC_VERSION SCENARIO CLIENT
#
# CACHE_DIR is where scripts/install-conformance.sh put Node 22 (node22/) and the suite
# versions; SUITE is one of them (v0.1, v0.2); SPEC_VERSION is passed as --spec-version ("-"
# passes none). A missing install skips the test (exit 77), or fails it when
# MCPC_REQUIRE_PEERS=1 (as in CI).
cache=$1 suite=$2 spec=$3 scenario=$4 client=$5
. "$(dirname "$0")/lib.sh"

if [ ! -x "$cache/node22/node_modules/.bin/node" ] ||
   [ ! -d "$cache/$suite/node_modules/@modelcontextprotocol/conformance" ]; then
    echo "conformance suite $suite not installed in $cache (run scripts/install-conformance.sh)"
    [ "${MCPC_REQUIRE_PEERS:-0}" = 1 ] && exit 1
    exit 77
fi
PATH="$cache/node22/node_modules/.bin:$PATH"
export PATH

set -- --command "$client" --scenario "$scenario" -o "$scratch/results"
[ "$spec" != - ] && set -- "$@" --spec-version "$spec"
out="$scratch/output.txt"
(cd "$cache/$suite" && npx --no-install conformance client "$@") >"$out" 2>&1
status=$?
cat "$out"

# The summary line: "Passed: X/Y, N failed, M warnings". No other outcome counts as a pass.
summary=$(grep -E '^Passed: [0-9]+/[0-9]+, [0-9]+ failed, [0-9]+ warnings' "$out" | tail -n 1)
[ "$status" = 0 ] || fail "the suite exited with $status"
case $summary in
    "") fail "no summary line in the suite's output" ;;
    *", 0 failed, 0 warnings"*) ;;
    *) fail "the suite reported: $summary" ;;
esac
grep -q 'OVERALL: PASSED' "$out" || fail "the suite did not report OVERALL: PASSED"
[ "$failures" = 0 ] && echo "PASS: $scenario ($suite, spec $spec): $summary"
exit $((failures > 0))
