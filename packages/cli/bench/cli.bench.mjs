#!/usr/bin/env node
// Start-up and exec overhead of the CLI and the MCP server, against the floor they sit on:
//   1. `ca-sandbox --version` vs `node -e 0`                       (goal ≤ 1.3×)
//   2. `ca-sandbox exec <id> -- true` vs raw `docker exec <c> true` (goal ≤ +30 ms, issue 10), beside
//      the floor under it: a node process starting against the docker CLI starting
//      (`node -e 0` vs `docker --version`), which no code of ours can remove
//   3. MCP sandbox_exec round trip (SDK client) vs raw docker exec  (goal ≤ 0.8×, issue 30: keep it)
// Medians of interleaved runs. Needs `pnpm build` and a Docker engine with the local
// ca-sbx-base:* images. Usage: node packages/cli/bench/cli.bench.mjs [runs]
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../bin/ca-sandbox.js', import.meta.url));
const RUNS = Number(process.argv[2] ?? 21);
const ENV = {
  ...process.env,
  CA_SANDBOX_BASE_IMAGE: process.env.CA_SANDBOX_BASE_IMAGE ?? 'ca-sbx-base:debian',
  NO_COLOR: '1',
};

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function timed(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Runs a and b alternately (so drift hits both), after one warm-up each; returns medians. */
async function compare(a, b, runs = RUNS) {
  await a();
  await b();
  const ta = [];
  const tb = [];
  for (let i = 0; i < runs; i++) {
    ta.push(await timed(a));
    tb.push(await timed(b));
  }
  return { a: median(ta), b: median(tb) };
}

const fmt = (ms) => `${ms.toFixed(1)} ms`;
const rows = [];
function report(name, floorName, floor, ours, goal, pass) {
  rows.push({ name, floorName, floor, ours, goal, pass });
  console.log(
    `${name.padEnd(34)} ${fmt(ours).padStart(10)} vs ${floorName.padEnd(22)} ${fmt(floor).padStart(10)}  ratio ${(ours / floor).toFixed(2)}x  +${(ours - floor).toFixed(1)} ms  goal ${goal}  ${pass ? 'ok' : 'MISSED'}`,
  );
}

const node = (args) => run(process.execPath, args, { env: ENV });
const version = await compare(
  () => node(['-e', '0']),
  () => node([BIN, '--version']),
);
report('ca-sandbox --version', 'node -e 0', version.a, version.b, '≤ 1.3x', version.b / version.a <= 1.3);

const work = mkdtempSync(join(tmpdir(), 'ca-sbx-bench-'));
writeFileSync(join(work, 'README.md'), 'bench\n');
const id = `sbx-bench-${randomUUID().slice(0, 8)}`;
let client;
try {
  const created = JSON.parse((await node([BIN, 'create', work, '--name', id, '--json'])).stdout);
  const container = created.container;
  const rawExec = () => run('docker', ['exec', container, 'true']);

  const exec = await compare(rawExec, () => node([BIN, 'exec', id, '--', 'true']));
  report(
    'ca-sandbox exec <id> -- true',
    'docker exec <c> true',
    exec.a,
    exec.b,
    '≤ +30 ms',
    exec.b - exec.a <= 30,
  );
  const floor = await compare(
    () => run('docker', ['--version']),
    () => node(['-e', '0']),
  );
  console.log(
    `  floor: node -e 0 ${fmt(floor.b)} vs docker --version ${fmt(floor.a)}: +${(floor.b - floor.a).toFixed(1)} ms of the gap is node starting`,
  );

  client = new Client({ name: 'ca-sandbox-bench', version: '0.0.0' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: ENV, stderr: 'ignore' }),
  );
  const mcpExec = async () => {
    const result = await client.callTool({ name: 'sandbox_exec', arguments: { id, command: ['true'] } });
    if (result.isError) throw new Error(result.content?.[0]?.text ?? 'sandbox_exec failed');
  };
  await mcpExec();
  const mcp = await compare(rawExec, mcpExec);
  report('MCP sandbox_exec round trip', 'docker exec <c> true', mcp.a, mcp.b, '≤ 0.8x', mcp.b / mcp.a <= 0.8);
} finally {
  await client?.close().catch(() => {});
  await node([BIN, 'destroy', id]).catch((error) =>
    console.error(`cleanup: ${error.stderr ?? error.message}`),
  );
  rmSync(work, { recursive: true, force: true });
}
console.log(`(medians of ${RUNS} interleaved runs)`);
if (process.argv.includes('--json')) console.log(JSON.stringify(rows));
