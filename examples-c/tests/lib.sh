# Shared helpers for the mcp-call test scripts (POSIX sh). Sourced, not run.

# A scratch directory for logs and captured output: ctest gives each test its own.
scratch=${MCPC_TEST_SCRATCH:-${TMPDIR:-/tmp}/mcpc-examples}
mkdir -p "$scratch" || exit 1

failures=0

# Runs the program under test: through MCPC_TEST_EMULATOR when ctest sets one (a cross build:
# Wine for Windows programs), else directly.
run() {
    if [ -n "${MCPC_TEST_EMULATOR:-}" ]; then
        "$MCPC_TEST_EMULATOR" "$@"
    else
        "$@"
    fi
}
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# Milliseconds on a monotonic-enough clock. GNU date knows %N; elsewhere fall back to
# whole seconds (the bounds we check are generous enough for that).
now_ms() {
    ns=$(date +%s%N)
    case $ns in
        *N) echo $(( $(date +%s) * 1000 )) ;;
        *) echo $(( ns / 1000000 )) ;;
    esac
}

# The slow tool's duration and the bound on a run that a cancel, precancel or timeout must end
# early: a run that reaches the bound did not end early. Under an emulator (Wine), starting each
# process can take seconds on a loaded machine, so both are longer there.
if [ -n "${MCPC_TEST_EMULATOR:-}" ]; then
    slow_ms=30000 bound_ms=15000
else
    slow_ms=5000 bound_ms=2500
fi

# A sanitizer exits with 1 by default, which could pass for an expected exit code; its report
# on stderr cannot.
check_no_sanitizer_report() {
    if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$1"; then
        fail "a sanitizer reported an error (see stderr above)"
    fi
}

show() {
    echo "--- $1"
    cat "$2"
}
