#!/usr/bin/env python3
"""Writes build/reliability.md from what a run of scripts/test.sh left behind.

Inputs (all written by that run; a missing one is reported as "not run", never invented):
  build/logs/cargo-test.log                    `cargo test` output: every Rust test and its result
  build/logs/cargo-test-neighbours.log         the fault, hostile and cancellation tests again,
                                               beside 200 neighbour clients
  build/logs/ctest.log                         ctest's console output: every C test and its result
  build/examples/Testing/Temporary/LastTest.log  ctest's full log: the stress runs' own summaries
  build/logs/fuzz.log                          scripts/fuzz.sh output: libFuzzer's run counts
  build/logs/windows-checks.log, windows-ctest.log  scripts/windows-checks.sh: the Windows build
                                               and its tests under Wine
  build/logs/macos-checks.log                  scripts/macos-checks.sh: check and clippy for macOS
  build/logs/go.log, build/logs/swift.log      the Go and Swift bindings' test runs
  build/report/figures.txt                     figures the tests recorded (common::report_figure)
  build/report/bad_input.txt                   each bad-input call and which arguments were NULL
  include/mcpc.h                               every export and its pointer parameters

Usage: scripts/reliability-report.py [OUTPUT]   (default build/reliability.md)

The test run never touches the tracked docs/reliability.md: scripts/update-reliability.sh copies
a run's report there, on purpose, when the figures are worth committing.
"""
import datetime
import os
import platform
import re
import subprocess
import sys

# Parts the run should have earned and did not: the report says so and exits 1.
INCOMPLETE = []

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def read(path):
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def cargo_tests(log):
    """{test file: [(test name, result)]} from `cargo test` output."""
    files, current = {}, None
    for line in log.splitlines():
        running = re.match(r"\s*Running (\S+)", line)
        if running:
            current = running.group(1)
            files.setdefault(current, [])
            continue
        if line.strip().startswith("Doc-tests"):
            current = None
        result = re.match(r"test (\S+) \.\.\. (ok|FAILED|ignored.*)$", line)
        if result and current:
            files[current].append((result.group(1), result.group(2)))
    return files


def ctest_runs(console, log):
    """{test name: (result, output)}: results from ctest's console output, outputs from its
    LastTest.log (which records a skipped test as passed)."""
    outputs = {}
    for block in re.split(r"^(?=\d+/\d+ Testing: )", log or "", flags=re.M):
        name = re.search(r"\d+/\d+ Testing: (\S+)", block)
        output = re.search(r"Output:\n-+\n(.*?)<end of output>", block, re.S)
        if name and output:
            outputs[name.group(1)] = output.group(1)
    runs = {}
    for name, result in re.findall(r"Test +#\d+: (\S+) \.*\s*\**(\w+)", console):
        runs[name] = (result.lower(), outputs.get(name, ""))
    return runs


def section_faults(out, tests):
    out.append("## Fault injection\n")
    out.append(
        "Tests against a real process or socket: our test server misbehaving on purpose over "
        "stdio, or a scripted TCP server for HTTP. What each asserts is in its source; below, "
        "each suite's and each test's result in this run.\n"
    )
    if tests is None:
        out.append("**Not run**: no `cargo test` log.\n")
        return
    suites = [
        ("tests/faults.rs", "stdio: misbehaving server"),
        ("tests/stdio_client.rs", "stdio: process and framing"),
        ("tests/http_faults.rs", "HTTP: scripted faulty server"),
        ("tests/http.rs", "HTTP: transport behaviour"),
        ("tests/cancellation.rs", "cancellation races"),
    ]
    out.append("| suite | tests | passed | failed | ignored |")
    out.append("|---|---:|---:|---:|---:|")
    listed = []
    for path, title in suites:
        results = next((r for f, r in tests.items() if f.startswith(path)), None)
        if results is None:
            out.append(f"| {title} (`{path}`) | not run | | | |")
            continue
        passed = sum(1 for _, r in results if r == "ok")
        failed = sum(1 for _, r in results if r == "FAILED")
        ignored = sum(1 for _, r in results if r.startswith("ignored"))
        out.append(f"| {title} (`{path}`) | {len(results)} | {passed} | {failed} | {ignored} |")
        listed.append((path, results))
    out.append("")
    for path, results in listed:
        if path in ("tests/faults.rs", "tests/http_faults.rs"):
            out.append(f"`{path}`:\n")
            for name, result in results:
                out.append(f"- {name.replace('_', ' ')}: **{result}**")
            out.append("")


# Hostile servers and hosts: each promise, the tests that try to break it (a whole test file, or
# one test in it, or a ctest name), and the start of the figures those tests record.
HOSTILE = [
    ("1", "a write the server never reads: cancel, timeout and close free the caller at once",
     ["tests/hostile_writes.rs"], [], ["stdio, a 4 MiB request", "stdio, a call behind a 4 MiB"]),
    ("2", "a line with no newline fails the pending calls once it passes the limit",
     ["tests/endless_line.rs"], [], ["stdio, a server writing an endless line"]),
    ("3", "every callback kind may make a request, cancel a call, close and connect the client",
     ["tests/callbacks_reentry.rs"], [], []),
    ("4", "close and free are bounded whatever descendants hold the pipes",
     ["tests/descendants.rs::close_and_free_return_in_bounded_time_while_a_detached_descendant"
      "_holds_the_pipes", "tests/threads.rs::close_leaves_no_thread_blocked_on_pipes_a_descendant"
      "_holds"], [], ["close with a detached descendant"]),
    ("5", "the server's exit is seen while a descendant holds its stdout",
     ["tests/descendants.rs::a_server_that_exits_while_a_descendant_holds_its_stdout_fails_pending"
      "_calls"], [], ["stdio server exit seen"]),
    ("6", "close ends a connect at any point with CLOSED",
     ["tests/connect_close.rs"], [], ["close during a stdio connect", "close during an HTTP connect"]),
    ("7", "a cancelled or timed-out call does not wait for unrelated callbacks",
     ["tests/callbacks_cancel.rs"], [], ["cancel with an unrelated"]),
    ("8", "connect after a failed connection makes a new one (stdio and HTTP); with a reconnect "
     "policy the next request does, the failed call is never sent again, listens come back, "
     "the waits grow and stop at the maximum, and close ends them at once",
     ["tests/reconnect.rs", "tests/self_heal.rs"], [], ["self-healing"]),
    ("9", "a flooding server cannot exhaust memory; close stays bounded",
     ["tests/flood_stdio.rs", "tests/flood_http.rs", "tests/flood_notifications.rs",
      "tests/flood_handlers.rs"], ["stress_paused", "stress_callbacks"],
     ["stdio ping flood", "HTTP standalone ping flood", "stdio notification flood"]),
    ("10", "no callback runs once close or free has returned",
     ["tests/ffi_handlers_close.rs"], [], ["close with a 500 ms handler", "free with a handler"]),
    ("11", "no credential in any message, log line or error data",
     ["tests/http_faults.rs::no_message_quotes_a_credential",
      "tests/oauth_hostile.rs::no_auth_extension_credential_reaches_a_message_log_or_trace"], [],
     ["credentials:", "auth extension credentials:"]),
    ("12", "every setter takes its full range or refuses; no panic escapes; nothing on stderr",
     ["tests/edge_values.rs", "tests/panics.rs"], [], ["edge values:"]),
    ("13", "headers that shape the exchange are refused; oversized mirrored headers too",
     ["tests/http_headers.rs"], [], ["header limits:"]),
    ("14", "started calls (the completion API) complete exactly once, with the cancel, timeout "
     "and close promises of blocking calls, many in flight from one thread",
     ["tests/completion.rs"], ["stress_completion"], []),
    ("15", "OAuth under attack: every exchange of the flow bounded in time and size, ended by "
     "the call's timeout, cancel and close; redirects of token requests and metadata, another "
     "issuer or resource, plain http off loopback and unsendable tokens refused; the token "
     "reaches only the resource",
     ["tests/oauth_hostile.rs"], [], ["OAuth,"]),
    ("36.5", "every queue a server can fill is bounded in bytes as well as in count",
     ["tests/flood_large_notifications.rs",
      "tests/flood_handlers.rs::large_sampling_requests_run_a_bounded_number_of_bytes_of_handlers",
      "tests/cache.rs::the_cache_is_bounded_in_bytes"], [],
     ["stdio flood of 1 MiB notifications", "HTTP standalone flood of 1 MiB notifications"]),
    ("36.6", "results of 64 MiB work by default and peak at about twice their size",
     ["tests/large_results.rs"], [], ["large result,"]),
    ("36.7", "version 1 and version 3 client certificates are presented for the server to judge",
     ["tests/network.rs::client_certificates_of_version_1_and_3_are_presented_for_the_server_to"
      "_judge"], [], []),
    # Issue 36 ("every bound holds"), numbered by its items.
    ("36.1", "no process of the server's process group outlives close or free, whether the "
     "server exited first or not",
     ["tests/process_group.rs"], [],
     ["close after the server exited", "free after the server exited", "close of a running server"]),
    ("36.2", "close and cancel end a call waiting between requests (a task's next poll) at once",
     ["tests/close_wakes_waits.rs"], [], ["close of a call waiting between task polls"]),
    ("36.8", "a server cannot set the client's pace: one task is polled at most 50 times a second",
     ["tests/tasks.rs::a_zero_poll_interval_is_held_to_at_most_50_polls_a_second"], [],
     ["a task whose server asks pollIntervalMs 0"]),
    ("36.9", "a server's fault is reported as the server's, never as the host's INVALID_ARGUMENT",
     ["tests/server_faults_are_the_servers.rs"], [], []),
]


def section_hostile(out, tests, runs, figures):
    out.append("## Hostile servers and hosts\n")
    out.append(
        "Each promise has tests whose server or host tries to break it (a server that stops "
        "reading, floods, forks a descendant that keeps the pipes, callbacks that call back in). "
        "Results and figures are this run's.\n"
    )
    if tests is None:
        out.append("**Not run**: no `cargo test` log.\n")
        return
    lines = (figures or "").splitlines()
    out.append("| # | promise | tests | passed | failed | figures |")
    out.append("|---|---|---|---:|---:|---|")
    for number, promise, specs, ctests, keys in HOSTILE:
        names, passed, failed = [], 0, 0
        for spec in specs:
            path, _, name = spec.partition("::")
            results = next((r for f, r in tests.items() if f.startswith(path)), None)
            if results is None:
                names.append(f"`{spec}` (not run)")
                failed += 1
                continue
            picked = [(n, r) for n, r in results if not name or n == name]
            if not picked:
                names.append(f"`{spec}` (not found)")
                failed += 1
                continue
            names.append(f"`{spec}`")
            # An ignored test is a child-process body that another test of the file runs.
            passed += sum(1 for _, r in picked if r == "ok")
            failed += sum(1 for _, r in picked if r == "FAILED")
        for name in ctests:
            for run, (result, _) in sorted((runs or {}).items()):
                if run == name or run.startswith(name + "_"):
                    names.append(f"ctest `{run}`")
                    passed += result == "passed"
                    failed += result != "passed"
        found = [l.strip() for l in lines if any(l.strip().startswith(k) for k in keys)]
        shown = "<br>".join(sorted(set(found))) if found else ("-" if not keys else "not recorded")
        out.append(f"| {number} | {promise} | {', '.join(names)} | {passed} | {failed} | {shown} |")
    out.append("")


# Promises of README.md and docs/security.md: each promise, its tests (a test file, or one test
# in it), and the start of the figures they record.
PROMISES = [
    ("a cancelled worker returns at once (p99 of 200 cancels of a blocked call under 50 ms)",
     ["tests/cancel_latency.rs"], ["cancel latency"]),
    ("the discovery probe is never cancelled on the wire (timeout, close during connect)",
     ["tests/probe_never_cancelled.rs"], []),
    ("a cancel racing close: one outcome, a bounded close, at most one notice",
     ["tests/cancel_during_close.rs"], ["cancel during close"]),
    ("writing to a server that closed its stdin never kills the host with SIGPIPE",
     ["tests/signals.rs::writing_to_a_server_that_closed_its_stdin_never_kills_the_host"], []),
    ("a host's promise that SIGPIPE is ignored: checked at connect, and then no mask per write",
     ["tests/signals.rs::a_host_that_ignores_sigpipe_can_say_so_and_writes_skip_the_mask"], []),
    ("close signals the server's whole process group",
     ["tests/signals.rs::close_signals_the_servers_whole_process_group"],
     ["close with a forked child in the server's process group"]),
    ("teardown leaves no descriptor and no process (1000 connect/close cycles, exact count)",
     ["tests/fd_leak.rs"], ["teardown: 1000 stdio connect/close cycles"]),
    ("the server certificate is verified over HTTPS",
     ["tests/http.rs::https_verifies_the_server_certificate"], []),
    # issue 19
    ("the wire trace never carries an HTTP header or a credential put in one",
     ["tests/trace.rs::http_trace_never_carries_a_header_or_its_credential"], []),
    ("a listen's cancel reaches the server (stdio: notifications/cancelled; HTTP: its stream closed)",
     ["tests/listen.rs::modern_stdio_listen_hears_what_it_asked_and_the_cancel_reaches_the_server",
      "tests/listen.rs::modern_http_listen_hears_what_it_asked_and_the_cancel_closes_its_stream"], []),
    # issue 36, items 3 and 4
    ("the connect timeout bounds the whole of connect (silent stdio and HTTP servers, a silent "
     "proxy tunnel; auto, legacy and modern modes), a request's timeout all its input rounds",
     ["tests/connect_deadline.rs"], ["connect_deadline:"]),
    ("close and free return within limits::CLOSE_BOUND (8 s) whatever servers and callbacks do; "
     "a log or stderr callback may connect during a reconnect",
     ["tests/close_bound.rs"], ["close_bound:"]),
    # issue 33, item 2
    ("an idle client holds a few KiB of heap: at most 24 KiB per stdio client, 32 KiB per modern "
     "HTTP client (50 clients, every live heap byte counted)",
     ["tests/idle_heap.rs"], ["idle_heap:"]),
    # issue 33, item 1
    ("an SSE response read by a worker (a started call) waits on the reactor, not in a thread: "
     "200 modern HTTP clients each with a started call waiting hold at most 16 library threads; "
     "cancel, timeout and close of a parked call end it at once and the server sees its stream close",
     ["tests/parked_replies.rs"], ["parked_replies:"]),
    # issue 33, one connection per client
    ("an idle HTTP client holds no pooled connection after the idle age (4 s), none once the "
     "server closed it, and its next request opens a new one (also over TLS, through a proxy, "
     "and racing the close); 200 idle clients hold at most their standalone streams",
     ["tests/idle_connections.rs", "tests/many_http_clients.rs"],
     ["idle sockets:"]),
    ("the 2024-11-05 HTTP+SSE transport's event stream waits on the reactor, not in a thread: "
     "200 idle clients hold at most 16 library threads and each still gets its answers; a "
     "dribbled answer and a flood arrive whole, cancel and close of a call waiting on it return "
     "at once, its end fails the pending call with TRANSPORT_ERROR",
     ["tests/parked_legacy_sse.rs"], ["parked_legacy_sse:"]),
]


def section_promises(out, tests, figures):
    out.append("## Promises of the README and docs/security.md\n")
    if tests is None:
        out.append("**Not run**: no `cargo test` log.\n")
        return
    lines = (figures or "").splitlines()
    out.append("| promise | tests | passed | failed | figures |")
    out.append("|---|---|---:|---:|---|")
    for promise, specs, keys in PROMISES:
        names, passed, failed = [], 0, 0
        for spec in specs:
            path, _, name = spec.partition("::")
            results = next((r for f, r in tests.items() if f.startswith(path)), None)
            picked = [(n, r) for n, r in (results or []) if not name or n == name]
            if not picked:
                names.append(f"`{spec}` (not run)")
                failed += 1
                INCOMPLETE.append(f"promise not tested in this run: {promise}")
                continue
            names.append(f"`{spec}`")
            passed += sum(1 for _, r in picked if r == "ok")
            failed += sum(1 for _, r in picked if r != "ok")
        found = [l.strip() for l in lines if any(l.strip().startswith(k) for k in keys)]
        shown = "<br>".join(sorted(set(found))) if found else ("-" if not keys else "not recorded")
        out.append(f"| {promise} | {', '.join(names)} | {passed} | {failed} | {shown} |")
    out.append("")


def header_pointer_parameters(header):
    """[(export, [(index, parameter)])] for every function declared in include/mcpc.h, with
    its pointer parameters (the ones a caller can pass NULL for)."""
    text = re.sub(r"/\*.*?\*/", "", header or "", flags=re.S)
    exports = []
    for name, params in re.findall(r"^[A-Za-z][\w *]*?\b(mcp_\w+)\(([^)]*)\);", text, re.M):
        params = [p.strip() for p in params.replace("\n", " ").split(",")]
        params = [] if params == ["void"] else params
        pointers = [(i, re.findall(r"\w+", p)[-1]) for i, p in enumerate(params) if "*" in p]
        exports.append((name, pointers))
    return sorted(exports)


def section_bad_input(out, tests, log):
    out.append("## Bad input through the C API\n")
    out.append(
        "`tests/ffi_bad_input.rs` calls every export through a macro that checks, at run time, "
        "which arguments were NULL pointers and logs them once the call has returned "
        "(`build/report/bad_input.txt`). A cell below is that log: the tests that made a call "
        "where this parameter was the only NULL pointer, with their results in this run. "
        "Parameters are read from `include/mcpc.h`.\n"
    )
    results = None if tests is None else next(
        (r for f, r in tests.items() if f.startswith("tests/ffi_bad_input.rs")), None)
    if results is None or log is None:
        out.append("**Not run**: no `cargo test` result or no bad-input log.\n")
        return
    outcome = dict(results)
    cells = {}
    for line in log.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        export, nulls, test = parts
        nulls = [int(i) for i in nulls.split(",") if i]
        if len(nulls) == 1:
            cells.setdefault((export, nulls[0]), set()).add(test)
    exports = header_pointer_parameters(read("include/mcpc.h"))
    total = sum(len(p) for _, p in exports)
    earned, missing = 0, []
    out.append("| export | parameter | passed NULL (alone) by | result |")
    out.append("|---|---|---|---|")
    for export, pointers in exports:
        for index, parameter in pointers:
            names = sorted(cells.get((export, index), ()))
            if not names:
                missing.append(f"`{export}({parameter})`")
                out.append(f"| `{export}` | `{parameter}` | **never** | - |")
                continue
            states = [outcome.get(n, "not run") for n in names]
            ok = all(s == "ok" for s in states)
            earned += ok
            shown = ", ".join(f"{n.replace('_', ' ')} ({s})" for n, s in zip(names, states))
            out.append(f"| `{export}` | `{parameter}` | {shown} | {'ok' if ok else '**FAILED**'} |")
    out.append("")
    passed = sum(1 for _, r in results if r == "ok")
    crashed = len(results) == 0
    global INCOMPLETE
    if missing or earned < total:
        INCOMPLETE.append(f"bad input: {total - earned} of {total} pointer parameters not earned")
    out.append(
        f"- {len(exports)} exported functions, {total} pointer parameters; NULL passed alone "
        f"and the test passed: {earned} of {total}"
        + (f"; never passed NULL alone: {', '.join(missing)}" if missing else "")
    )
    out.append(
        f"- `tests/ffi_bad_input.rs`: {passed} of {len(results)} tests passed"
        + ("" if passed == len(results) and not crashed else " (**not all**)")
        + "; a crash would have ended the test binary and left tests without a result\n"
    )


def section_neighbours(out, tests):
    out.append("## Beside 200 neighbours\n")
    out.append(
        "The fault, hostile and cancellation test files run a second time with "
        "`MCPC_TEST_NEIGHBOURS=200`: each test binary holds 200 more clients of their own stdio "
        "servers, sharing the process's reactor and pools with the tests (tests/common/"
        "neighbours.rs: 8 kept busy by two threads, so often two calls in flight, one idle "
        "neighbour after another closed and replaced; a neighbour's failed call aborts the "
        "binary). Their figures are in the lists above, marked \"beside 200 neighbour clients\".\n"
    )
    if tests is None:
        out.append("**Not run**: no log of the run beside neighbours.\n")
        INCOMPLETE.append("the tests beside neighbours did not run")
        return
    out.append("| test file | passed | failed |")
    out.append("|---|---|---|")
    for name, cases in sorted(tests.items(), key=lambda item: item[0]):
        passed = sum(1 for _, result in cases if result == "ok")
        failed = sum(1 for _, result in cases if result == "FAILED")
        if failed or not cases:
            INCOMPLETE.append(f"{name} failed or ran nothing beside neighbours")
        out.append(f"| `{name}` | {passed} | {failed} |")
    out.append("")


def section_stress(out, runs):
    out.append("## Race stress\n")
    out.append(
        "`examples-c/stress.c` through the public header: 8 threads on one client against the "
        "`echo` tool with 0-3 ms delays, a third of the calls cancelled at a random moment from "
        "another thread, a sixth with a 1-3 ms timeout, half of the tokens freed while in use; "
        "then 8 calls blocked forever and a close from another thread. It checks that every "
        "call has exactly one outcome, that every OK carries its own payload, and that the "
        "server read exactly one `notifications/cancelled` per cancel or timeout that won after "
        "its request was sent.\n"
    )
    if runs is None:
        out.append("**Not run**: no ctest log.\n")
        return
    out.append("| build | result | what the run printed |")
    out.append("|---|---|---|")
    builds = [
        ("stress", "plain"),
        ("stress_asan", "ASan + UBSan (C), LeakSanitizer"),
        ("stress_tsan", "TSan (C, Rust and Rust's std instrumented)"),
        ("stress_valgrind", "valgrind memcheck"),
    ]
    for name, title in builds:
        result, output = runs.get(name, ("not run", ""))
        lines = [l.strip() for l in output.splitlines()]
        summary = [l for l in lines if l.startswith("stress:")]
        summary += [re.sub(r"^==\d+==\s*", "", l) for l in lines
                    if "ERROR SUMMARY" in l or "definitely lost" in l]
        if name == "stress_tsan" and result != "not run":
            reports = output.count("WARNING: ThreadSanitizer")
            summary.append(f"ThreadSanitizer reports in its output: {reports}")
            canary = runs.get("stress_tsan_canary", ("not run", ""))[0]
            summary.append("the canary (a data race on purpose) was reported: "
                           + ("yes" if canary == "passed" else f"no ({canary})"))
        out.append(f"| {title} | **{result}** | {'<br>'.join(summary) or '-'} |")
    out.append("")
    sanitized = {n: r for n, (r, _) in runs.items() if n.endswith("_asan")}
    passed = sum(1 for r in sanitized.values() if r == "passed")
    out.append(
        f"Every other C example test also runs with ASan + UBSan: {passed} of "
        f"{len(sanitized)} `_asan` tests passed; ctest ran {len(runs)} tests in all, "
        f"{sum(1 for r, _ in runs.values() if r == 'passed')} passed, "
        f"{sum(1 for r, _ in runs.values() if r == 'skipped')} skipped.\n"
    )


def section_figures(out, figures):
    out.append("## Teardown and leaks\n")
    if not figures:
        out.append("**Not run**: no figures recorded.\n")
        return
    for line in sorted(set(figures.splitlines())):
        if line.strip():
            out.append(f"- {line.strip()}")
    out.append("")


def section_fuzz(out, log):
    out.append("## Fuzzing\n")
    out.append(
        "cargo-fuzz (libFuzzer) targets for the SSE parser, the JSON-RPC frame decoder and the "
        "header encoder, started from the seeds in `fuzz/seeds`, by `scripts/fuzz.sh`.\n"
    )
    if log is None:
        out.append("**Not run**: no fuzz log.\n")
        return
    skipped = [l for l in log.splitlines() if l.startswith(("fuzz: skipped", "fuzz: FAILED"))]
    if skipped:
        out.append(f"**Not run** ({skipped[0][len('fuzz: '):]})\n")
        return
    out.append("| target | runs | seconds | coverage | crashes |")
    out.append("|---|---:|---:|---:|---:|")
    for target, body in re.findall(r"== fuzz (\w+) for \d+s\n(.*?)(?=\n== fuzz |\Z)", log, re.S):
        done = re.search(r"Done (\d+) runs in (\d+) second", body)
        cov = re.findall(r"cov: (\d+)", body)
        crashed = "deadly signal" in body or "ERROR: libFuzzer" in body or "panicked" in body
        out.append(
            f"| {target} | {done.group(1) if done else 'did not finish'} | "
            f"{done.group(2) if done else '-'} | {cov[-1] if cov else '-'} | "
            f"{'**yes**' if crashed or not done else 0} |"
        )
    out.append("")


def section_platforms(out, windows, windows_ctest, macos):
    out.append("## Platforms\n")
    out.append(
        "Linux runs everything above. Windows: the library, the test server and the C examples "
        "cross-built with mingw-w64 (`scripts/windows-checks.sh`) and run under Wine against the "
        "Windows test server. macOS: compiled and linted for x86_64 and arm64, nothing run "
        "(`scripts/macos-checks.sh`).\n"
    )
    out.append("| platform | check | result |")
    out.append("|---|---|---|")
    if windows_ctest is None or windows is None:
        INCOMPLETE.append("the Windows checks did not run")
        out.append("| Windows | scripts/windows-checks.sh | **not run** |")
    else:
        runs = re.findall(r"Test +#\d+: (\S+) \.*\s*\**(\w+).*?([\d.]+) sec", windows_ctest)
        for name, result, seconds in runs:
            out.append(f"| Windows (Wine) | {name} | {result.lower()}, {seconds} s |")
        failed = [name for name, result, _ in runs if result.lower() != "passed"]
        if failed or not runs:
            INCOMPLETE.append("Windows tests failed or none ran: " + ", ".join(failed))
        for binary, result in re.findall(r"^== wine (\S+?)(?:-[0-9a-f]+)?\.exe\n(test result: .*)$",
                                         windows, re.M):
            out.append(f"| Windows (Wine) | Rust tests/{binary}.rs | {result[len('test result: '):]} |")
        for line in windows.splitlines():
            if line.startswith("windows: ") and "FAIL" not in line:
                out.append(f"| Windows | {line[len('windows: '):]} | |")
    if macos is None:
        INCOMPLETE.append("the macOS checks did not run")
        out.append("| macOS | scripts/macos-checks.sh | **not run** |")
    else:
        checked = re.findall(r"^macos: (\S+) checked in (\d+) s", macos, re.M)
        for target, seconds in checked:
            out.append(f"| macOS | {target}: cargo check, clippy -D warnings | passed, {seconds} s |")
        if len(checked) != 2:
            INCOMPLETE.append("the macOS checks did not pass for both targets")
    out.append("")


def section_bindings(out, go, swift):
    out.append("## Bindings\n")
    out.append(
        "The Go module (`bindings/go/test.sh`: gofmt, go vet, `go test -race`) and the Swift "
        "package (`bindings/swift/test.sh`: `swift test` against the installed library, Swift 6.0 "
        "from Debian 13 in a chroot), each against the test server.\n"
    )
    out.append("| binding | test | result |")
    out.append("|---|---|---|")
    if go is None:
        INCOMPLETE.append("the Go bindings' tests did not run")
        out.append("| Go | bindings/go/test.sh | **not run** |")
    else:
        packages = re.findall(r"^(ok|FAIL)\s+(\S+)\s+([\d.]+s)", go, re.M)
        for result, package, seconds in packages:
            out.append(f"| Go | `go test -race` {package} | {result.lower()}, {seconds} |")
        if not packages or any(result != "ok" for result, _, _ in packages):
            INCOMPLETE.append("the Go bindings' tests failed or none ran")
    if swift is None:
        INCOMPLETE.append("the Swift binding's tests did not run")
        out.append("| Swift | bindings/swift/test.sh | **not run** |")
    else:
        cases = re.findall(r"^Test Case '(\S+)' (passed|failed) \(([\d.]+) seconds\)", swift, re.M)
        for name, result, seconds in cases:
            out.append(f"| Swift | {name} | {result}, {seconds} s |")
        if not cases or any(result != "passed" for _, result, _ in cases):
            INCOMPLETE.append("the Swift binding's tests failed or none ran")
    out.append("")


def main():
    output = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/reliability.md")
    cargo_log = read("build/logs/cargo-test.log")
    ctest_console = read("build/logs/ctest.log")
    ctest_log = read("build/examples/Testing/Temporary/LastTest.log")
    tests = cargo_tests(cargo_log) if cargo_log else None
    runs = ctest_runs(ctest_console, ctest_log) if ctest_console else None
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    out = [
        "# Reliability figures\n",
        "Written by `scripts/reliability-report.py` at the end of `scripts/test.sh` (the "
        "README's test command, which `.ci/run` runs), from that run's own logs, into "
        "build/reliability.md; `scripts/update-reliability.sh` copies it here. The committed "
        "copy is from a run of `.ci/run` on a fresh clone. A part that did not run says so.\n",
        f"Run: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, commit "
        f"`{commit}`, {platform.system()} {platform.machine()}, {os.cpu_count()} cores.\n",
    ]
    section_faults(out, tests)
    section_hostile(out, tests, runs, read("build/report/figures.txt"))
    section_promises(out, tests, read("build/report/figures.txt"))
    section_bad_input(out, tests, read("build/report/bad_input.txt"))
    neighbours_log = read("build/logs/cargo-test-neighbours.log")
    section_neighbours(out, cargo_tests(neighbours_log) if neighbours_log else None)
    section_stress(out, runs)
    section_figures(out, read("build/report/figures.txt"))
    section_fuzz(out, read("build/logs/fuzz.log"))
    section_bindings(out, read("build/logs/go.log"), read("build/logs/swift.log"))
    section_platforms(out, read("build/logs/windows-checks.log"), read("build/logs/windows-ctest.log"),
                      read("build/logs/macos-checks.log"))
    out.append("What is checked and why: docs/security.md (limits, no shell, TLS, logging).\n")
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    print(f"reliability report: {os.path.relpath(output, ROOT)}")
    if INCOMPLETE:
        print("reliability report: incomplete: " + "; ".join(INCOMPLETE), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
