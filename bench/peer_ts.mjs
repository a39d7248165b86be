// The TypeScript SDK (`@modelcontextprotocol/sdk`) client doing what bench.c does with mcpc: the
// same server, the same 1 KiB `tools/call echo`, sequential (latency percentiles, CPU per call),
// then 1, 4 and 16 calls in flight on one client. Prints `key=value` lines for bench/table.py.
// bench/run.sh copies it next to the node_modules it installs, so that the imports resolve.
//
// usage: node peer_ts.mjs SERVER ITERATIONS SECONDS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [server, iterations, seconds] = [process.argv[2], +process.argv[3], +process.argv[4]];
const args = { text: "x".repeat(1024) };
const nowUs = () => Number(process.hrtime.bigint()) / 1e3;
const cpuUs = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

function report(name, samples, cpu) {
  samples.sort((a, b) => a - b);
  const pick = (p) => samples[Math.round((samples.length - 1) * p)];
  console.log(
    `impl=ts case=${name} p50=${pick(0.5).toFixed(1)} p99=${pick(0.99).toFixed(1)} ` +
      `max=${samples.at(-1).toFixed(1)} cpu=${(cpu / samples.length).toFixed(1)}`,
  );
}

const client = new Client({ name: "bench", version: "1" });
await client.connect(new StdioClientTransport({ command: server, stderr: "inherit" }));
const echo = () => client.callTool({ name: "echo", arguments: args });
for (let i = 0; i < Math.min(iterations, 200); i++) await echo();
for (const [name, call] of [["stdio.echo", echo], ["stdio.ping", () => client.ping()]]) {
  const samples = [];
  const cpu = cpuUs();
  for (let i = 0; i < iterations; i++) {
    const start = nowUs();
    await call();
    samples.push(nowUs() - start);
  }
  report(name, samples, cpuUs() - cpu);
}
for (const inflight of [1, 4, 16]) {
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
  console.log(`impl=ts case=stdio.tput${inflight} rate=${(calls / ((nowUs() - start) / 1e6)).toFixed(0)}`);
}
await client.close();
