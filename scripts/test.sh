#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (the header freshness check and the interop
# tests against real MCP servers among them; the fault, hostile and cancellation ones again
# beside 200 neighbour clients), clippy, rustfmt, then the C examples under ctest,
# plain, with ASan/UBSan, with TSan and under valgrind, with the packaging and header tests; the
# C ABI against its committed baseline and the library's exported symbols (scripts/abi.sh); the
# release archive built and used without Rust (scripts/dist.sh); the top-level CMake project as
# a subproject; the fuzz targets for a bounded time, the benchmark smoke run, the Go and Swift
# bindings, then the Windows checks (cross-built with mingw-w64, run under Wine) and the macOS
# ones (compiled and linted for both macOS targets; nothing runs). Ends by writing
# build/reliability.md from this run's logs (scripts/update-reliability.sh copies it to docs/).
#
# Each "== ..." block below is a stage. Every stage runs, even after one has failed, and the run
# ends with a table of each stage's outcome and time; it exits non-zero when any stage failed.
# MCPC_STAGES="abi dist" runs only the stages named (the names are in the table and in
# `stage NAME` below); the other stages are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

stage_names=()
stage_outcomes=()
stage_seconds=()

# stage NAME TITLE FUNCTION: runs FUNCTION in a subshell of its own with errexit, so that its
# first failing command ends the stage and not the run.
stage() {
  local name=$1 title=$2 function=$3 started status
  stage_names+=("$name")
  if [ -n "${MCPC_STAGES:-}" ] && [[ " $MCPC_STAGES " != *" $name "* ]]; then
    stage_outcomes+=(skipped)
    stage_seconds+=(0)
    return
  fi
  echo "== $title"
  started=$SECONDS
  set +e
  (
    set -euo pipefail
    "$function"
  )
  status=$?
  set -e
  stage_seconds+=($((SECONDS - started)))
  if [ "$status" = 0 ]; then
    stage_outcomes+=(passed)
  else
    stage_outcomes+=(failed)
    echo "== $name: FAILED (exit $status)"
  fi
}

summary() {
  local i name passed=0 failed=0 skipped=0
  for name in ${MCPC_STAGES:-}; do
    if [[ " ${stage_names[*]} " != *" $name "* ]]; then
      echo "== MCPC_STAGES names no stage \"$name\" (the stages: ${stage_names[*]})"
      failed=$((failed + 1))
    fi
  done
  echo
  echo "== summary"
  printf '%-10s %-8s %8s\n' stage outcome seconds
  for i in "${!stage_names[@]}"; do
    printf '%-10s %-8s %8s\n' "${stage_names[$i]}" "${stage_outcomes[$i]}" "${stage_seconds[$i]}"
    case "${stage_outcomes[$i]}" in
    passed) passed=$((passed + 1)) ;;
    failed) failed=$((failed + 1)) ;;
    *) skipped=$((skipped + 1)) ;;
    esac
  done
  if [ "$skipped" -gt 0 ]; then
    echo "stages: $passed passed, $failed failed, $skipped skipped"
  else
    echo "stages: $passed passed, $failed failed"
  fi
  [ "$failed" = 0 ]
}

install_tools() {
  bash scripts/install-deps.sh
  bash scripts/install-peers.sh
  bash scripts/install-conformance.sh
  bash scripts/install-nightly.sh
}

fmt() {
  cargo fmt --all -- --check
}

clippy() {
  cargo clippy --all-targets -- -D warnings
}

cargo_test() {
  # The interop matrix writes its page here; the committed docs/interop.md must match it.
  rm -f build/interop.md
  MCPC_INTEROP_MATRIX_OUT="$PWD/build/interop.md" cargo test 2>&1 | tee build/logs/cargo-test.log
  bash scripts/check-interop.sh
}

# The fault, hostile and cancellation tests again, each binary beside 200 clients of their own
# servers sharing the process's reactor and pools (tests/common/neighbours.rs), as in a host
# with many servers: cancel at once, close bounded and no callback after free must hold there
# too. (Tests that count the process's threads or descriptors are not among them.)
neighbour_tests=(faults hostile_writes http_faults server_faults_are_the_servers close_bound
  cancellation cancel_latency cancel_during_close callbacks_cancel close_wakes_waits
  dribbled_answers endless_line flood_stdio flood_http flood_notifications concurrent_writes
  descendants process_group signals http_unread_body blocked_callbacks_pool close_in_background
  idle_shutdown self_heal standalone_stream)

with_neighbours() {
  local tests=()
  for name in "${neighbour_tests[@]}"; do tests+=(--test "$name"); done
  MCPC_TEST_NEIGHBOURS=200 cargo test --no-fail-fast "${tests[@]}" 2>&1 |
    tee build/logs/cargo-test-neighbours.log
}

api_docs() {
  bash scripts/api-docs.sh
  python3 scripts/check-doc-links.py
}

c_examples() {
  local tsan_args
  tsan_args="$(bash scripts/build-tsan.sh)"
  tsan_args="${tsan_args:--DMCPC_TSAN_LIB= -DMCPC_TSAN_RUNTIME=}" # none: stress_tsan fails
  # shellcheck disable=SC2086 # two -D arguments, or none
  cmake -S examples-c -B build/examples -DCMAKE_BUILD_TYPE=RelWithDebInfo $tsan_args >/dev/null
  cmake --build build/examples -j2
  ctest --test-dir build/examples --output-on-failure 2>&1 | tee build/logs/ctest.log
}

abi() {
  bash scripts/abi.sh baseline 2>&1 | tee build/logs/abi.log
}

exports() {
  bash scripts/abi.sh exports 2>&1 | tee build/logs/exports.log
}

dist_archive() {
  bash scripts/dist.sh 2>&1 | tee build/logs/dist.log
  bash packaging/tests/dist_test.sh 2>&1 | tee -a build/logs/dist.log
}

cmake_subproject() {
  bash packaging/tests/subproject_test.sh 2>&1 | tee build/logs/cmake-subproject.log
  # Under CI the git clone's own cargo build (about 300 MB) is done with.
  if [ -n "${CI:-}" ]; then
    rm -rf build/subproject/fetch_git
  fi
}

fuzz() {
  if ! bash scripts/fuzz.sh 20 >build/logs/fuzz.log 2>&1; then
    tail -n 60 build/logs/fuzz.log
    echo "fuzz: failed (a target crashed: the input is in fuzz/artifacts/; or it could not run)"
    exit 1
  fi
  grep -E "^(==|fuzz:)|Done [0-9]+ runs" build/logs/fuzz.log
}

bench_smoke() {
  bash bench/run.sh --smoke >/dev/null
}

go_bindings() {
  bash bindings/go/test.sh 2>&1 | tee build/logs/go.log
}

swift_binding() {
  bash bindings/swift/test.sh 2>&1 | tee build/logs/swift.log
}

windows() {
  # Under CI the fuzz and TSan builds and the Swift root are done with by now: their 4 GB go
  # before the Windows builds, which come last, when the disk is fullest.
  if [ -n "${CI:-}" ]; then
    rm -rf .cache/fuzz-target target/tsan build/swift
    bash scripts/install-swift.sh remove
  fi
  echo "($(df -h --output=avail . | tail -1 | tr -d ' ') free on disk)"
  bash scripts/windows-checks.sh 2>&1 | tee build/logs/windows-checks.log
}

macos() {
  bash scripts/macos-checks.sh 2>&1 | tee build/logs/macos-checks.log
}

# The tracked files' state (their difference from HEAD), to compare after the run.
tracked_state() {
  git diff HEAD --binary 2>/dev/null | sha256sum
}

clean_tree() {
  # Outputs go under build/, dist/ and other ignored directories: the run rewrites no tracked
  # file (a developer's own uncommitted changes are the same before and after).
  if ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "not a git checkout: nothing to compare"
    return
  fi
  if [ "$(tracked_state)" != "$tracked_before" ]; then
    echo "the run changed tracked files:"
    git status --short --untracked-files=no
    exit 1
  fi
  echo "no tracked file changed"
}

reliability_report() {
  python3 scripts/reliability-report.py
}

# Every part must run: a missing peer server, tool or toolchain fails its test rather than
# skipping it (the interop tests, TLS, TSan, valgrind, fuzzing, the packaging tests).
export MCPC_REQUIRE_PEERS=1
# On a CI machine every build is a first build: incremental state would only fill the disk
# (about 1 GiB per target directory), and line tables are all the debug info a failing
# test's backtrace needs (full debug info is most of a debug build's size).
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
fi
# Where the tests record figures for the reliability report; logs of this run go beside it.
# (A run of some stages only keeps the logs of the others.)
if [ -z "${MCPC_STAGES:-}" ]; then
  rm -rf build/report build/logs
fi
mkdir -p build/report build/logs
tracked_before="$(tracked_state)"
export MCPC_REPORT_DIR="$PWD/build/report"

stage install "install what the tests need (scripts/install-*.sh)" install_tools
stage fmt "cargo fmt --check" fmt
stage clippy "cargo clippy -D warnings" clippy
stage test "cargo test" cargo_test
stage neighbours "fault, hostile and cancellation tests again, beside 200 clients sharing the reactor" with_neighbours
stage apidocs "API reference: doxygen on include/mcpc.h (no undocumented export); every link in the docs resolves" api_docs
stage ctest "C examples under ctest (plain, ASan/UBSan, TSan, valgrind)" c_examples
stage abi "ABI: the header's C ABI against abi/, and the baseline's history (scripts/abi.sh baseline)" abi
stage exports "exported symbols: libmcpc.so's are exactly the header's functions" exports
stage dist "release archive: scripts/dist.sh, then C (pkg-config) and C++ (find_package) consumers without Rust" dist_archive
stage cmake "CMake subproject: add_subdirectory and FetchContent (local path, git URL) give mcpc::mcpc" cmake_subproject
stage fuzz "fuzz targets, 20 s each" fuzz
stage bench "benchmark harness smoke run (builds and runs every case; figures not checked)" bench_smoke
stage go "Go bindings: gofmt, go vet, go test -race" go_bindings
stage swift "Swift binding: swift test against the installed library (Debian 13's Swift in a chroot)" swift_binding
stage windows "Windows: cross-built with mingw-w64, run under Wine" windows
stage macos "macOS: cargo check and clippy for x86_64-apple-darwin and aarch64-apple-darwin" macos
stage clean "the work tree: no tracked file changed by the run" clean_tree
stage report "reliability report: build/reliability.md from this run's logs" reliability_report

summary
