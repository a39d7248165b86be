// The TypeScript SDK (`@modelcontextprotocol/sdk`) client doing what bench.c does with mcpc: the
// same server, the same 1 KiB `tools/call echo`, sequential (latency percentiles, CPU per call),
// then 1, 8 and 16 calls in flight on one client; over stdio, then (unless
// MCPC_BENCH_STDIO_ONLY=1, for bench/echo_server.c) over Streamable HTTP (legacy era) to the same
// server started with `--http 0`. CPU and context switches per call for every case. Prints
// `key=value` lines for bench/table.py.
// bench/run.sh copies it next to the node_modules it installs, so that the imports resolve.
//
// usage: node peer_ts.mjs SERVER ITERATIONS SECONDS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";

const [server, iterations, seconds] = [process.argv[2], +process.argv[3], +process.argv[4]];
const args = { text: "x".repeat(1024) };
const nowUs = () => Number(process.hrtime.bigint()) / 1e3;
// CPU (us) and context switches (voluntary and not) of this process so far.
const usage = () => {
  const u = process.resourceUsage();
  return { cpu: u.userCPUTime + u.systemCPUTime, csw: u.voluntaryContextSwitches + u.involuntaryContextSwitches };
};
const perCall = (since, calls) => {
  const now = usage();
  return `cpu=${((now.cpu - since.cpu) / calls).toFixed(2)} csw=${((now.csw - since.csw) / calls).toFixed(2)}`;
};

function report(name, samples, since) {
  const used = perCall(since, samples.length);
  samples.sort((a, b) => a - b);
  const pick = (p) => samples[Math.round((samples.length - 1) * p)];
  console.log(
    `impl=ts case=${name} p50=${pick(0.5).toFixed(1)} p99=${pick(0.99).toFixed(1)} ` +
      `max=${samples.at(-1).toFixed(1)} ${used}`,
  );
}

async function measure(transport, prefix, iterations) {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  const echo = () => client.callTool({ name: "echo", arguments: args });
  for (let i = 0; i < Math.min(iterations / 4, 200); i++) await echo();
  for (const [name, call] of [["echo", echo], ["ping", () => client.ping()]]) {
    const samples = [];
    const since = usage();
    for (let i = 0; i < iterations; i++) {
      const start = nowUs();
      await call();
      samples.push(nowUs() - start);
    }
    report(`${prefix}.${name}`, samples, since);
  }
  for (const inflight of [1, 8, 16]) {
    const since = usage();
    let calls = 0;
    const start = nowUs();
    const deadline = start + seconds * 1e6;
    const caller = async () => {
      while (nowUs() < deadline) {
        await echo();
        calls++;
      }
    };
    await Promise.all(Array.from({ length: inflight }, caller));
    const rate = calls / ((nowUs() - start) / 1e6);
    console.log(`impl=ts case=${prefix}.tput${inflight} rate=${rate.toFixed(0)} ${perCall(since, Math.max(calls, 1))}`);
  }
  await client.close();
}

await measure(new StdioClientTransport({ command: server, stderr: "inherit" }), "stdio", iterations);
if (process.env.MCPC_BENCH_STDIO_ONLY === "1") process.exit(0);

// The HTTP server prints "listening on URL" first and exits when its stdin closes. At most 300
// sequential calls here: this client can take tens of milliseconds per call over HTTP.
const http = spawn(server, ["--http", "0"], { stdio: ["pipe", "pipe", "inherit"] });
const [first] = await once(createInterface({ input: http.stdout }), "line");
await measure(new StreamableHTTPClientTransport(new URL(first.split(" ").at(-1))), "http.legacy", Math.min(iterations, 300));
http.stdin.end();
