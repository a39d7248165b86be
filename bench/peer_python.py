"""The Python SDK (`mcp` 2.3.0) client doing what bench.c does with mcpc: the same server, the
same 1 KiB `tools/call echo`, sequential (latency percentiles, CPU per call), then 1, 8 and 16
calls in flight on one session; over stdio, then (unless MCPC_BENCH_STDIO_ONLY=1, for
bench/echo_server.c) over Streamable HTTP (legacy era) to the same server started with
`--http 0`. CPU and context switches per call for every case. Prints `key=value` lines for
bench/table.py.

usage: python peer_python.py SERVER ITERATIONS SECONDS
"""

import os
import resource
import subprocess
import sys
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def usage():
    """CPU seconds and context switches (voluntary and not) of this process so far."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime, u.ru_nvcsw + u.ru_nivcsw


def per_call(since, calls):
    cpu, switches = usage()
    return f"cpu={(cpu - since[0]) * 1e6 / calls:.2f} csw={(switches - since[1]) / calls:.2f}"


def report(case, samples, since):
    used = per_call(since, len(samples))
    samples.sort()
    n = len(samples)
    pick = lambda p: samples[int((n - 1) * p + 0.5)]
    print(
        f"impl=python case={case} p50={pick(0.5):.1f} p99={pick(0.99):.1f} "
        f"max={samples[-1]:.1f} {used}",
        flush=True,
    )


async def measure(streams, prefix, iterations, seconds):
    arguments = {"text": "x" * 1024}
    async with streams as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(min(iterations // 4, 200)):
                await session.call_tool("echo", arguments)
            for case, call in (
                ("echo", lambda: session.call_tool("echo", arguments)),
                ("ping", session.send_ping),
            ):
                samples = []
                since = usage()
                for _ in range(iterations):
                    start = time.perf_counter()
                    await call()
                    samples.append((time.perf_counter() - start) * 1e6)
                report(f"{prefix}.{case}", samples, since)

            for inflight in (1, 8, 16):
                since = usage()
                calls = 0
                deadline = time.perf_counter() + seconds
                start = time.perf_counter()

                async def caller():
                    nonlocal calls
                    while time.perf_counter() < deadline:
                        await session.call_tool("echo", arguments)
                        calls += 1

                async with anyio.create_task_group() as group:
                    for _ in range(inflight):
                        group.start_soon(caller)
                rate = calls / (time.perf_counter() - start)
                print(
                    f"impl=python case={prefix}.tput{inflight} rate={rate:.0f} "
                    f"{per_call(since, max(calls, 1))}",
                    flush=True,
                )


async def main(server, iterations, seconds):
    await measure(stdio_client(StdioServerParameters(command=server)), "stdio", iterations, seconds)
    if os.environ.get("MCPC_BENCH_STDIO_ONLY") == "1":
        return
    # The HTTP server prints "listening on URL" first and exits when its stdin closes. At most
    # 300 sequential calls here: this client can take tens of milliseconds per call over HTTP.
    http = subprocess.Popen([server, "--http", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        url = http.stdout.readline().decode().split()[-1]
        await measure(streamable_http_client(url), "http.legacy", min(iterations, 300), seconds)
    finally:
        http.stdin.close()
        http.wait()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
