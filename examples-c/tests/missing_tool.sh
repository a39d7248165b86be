#!/bin/sh
# missing_tool.sh NAME REASON
#
# Stands in for test NAME when the tool it needs was missing at configure time: exits 77
# (ctest: skipped), or 1 when MCPC_REQUIRE_PEERS=1 says every part must run (scripts/test.sh).
name=$1 reason=$2
if [ "${MCPC_REQUIRE_PEERS:-}" = 1 ]; then
    echo "$name: FAILED: did not run: $reason (MCPC_REQUIRE_PEERS=1)"
    exit 1
fi
echo "$name: skipped: $reason"
exit 77
