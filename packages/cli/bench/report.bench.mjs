#!/usr/bin/env node
// The vetting report at scale (issue 29): a box with 1,000 commands in its log and 100,000 files
// changed since the clone. Goal: the report is made in under 2 s and its making grows the
// process by under 50 MB. Printed: the report's own time and the peak RSS growth (measured in a
// child that loads the lifecycle first, so node's and the modules' own memory is not counted),
// beside the whole `ca-sandbox report --json` process (wall, peak RSS) for the user's view.
// Needs `pnpm build` and a Docker engine with the local ca-sbx-base:* images.
// Usage: node packages/cli/bench/report.bench.mjs [files] [commands] [added|modified]
// added (default): the files are new, written under one new folder; modified: they are in the
// checkout (a repo of that many files) and the tests rewrite each one.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const rowsOf = (m) => `${m.rows} row(s) in changes.${SHAPE}`;

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../bin/ca-sandbox.js', import.meta.url));
const LIFECYCLE = fileURLToPath(new URL('../../lifecycle/dist/index.js', import.meta.url));
const COMMAND_LOG = fileURLToPath(new URL('../../lifecycle/dist/command-log.js', import.meta.url));
const JSON_STREAM = fileURLToPath(new URL('../dist/json-stream.js', import.meta.url));
const FILES = Number(process.argv[2] ?? 100_000);
const COMMANDS = Number(process.argv[3] ?? 1000);
const SHAPE = process.argv[4] === 'modified' ? 'modified' : 'added';
const ENV = { ...process.env, NO_COLOR: '1' };

const cli = (args, options = {}) =>
  run(process.execPath, [BIN, ...args], { env: ENV, maxBuffer: 1 << 30, ...options });

const work = mkdtempSync(join(tmpdir(), 'ca-report-bench-'));
const id = `report-bench-${process.pid}`;
try {
  const repo = join(work, 'repo');
  spawnSync('mkdir', ['-p', repo]);
  writeFileSync(join(repo, 'README.md'), 'bench\n');
  const folders = Math.ceil(FILES / 1000);
  const writeFiles = `i=0; while [ $i -lt ${folders} ]; do mkdir -p out/d$i && (cd out/d$i && seq 1 1000 | xargs touch); i=$((i+1)); done`;
  if (SHAPE === 'modified') spawnSync('sh', ['-c', writeFiles], { cwd: repo });
  spawnSync('git', ['init', '-q'], { cwd: repo });
  spawnSync('git', ['add', '.'], { cwd: repo });
  spawnSync('git', ['-c', 'user.email=b@example.invalid', '-c', 'user.name=b', 'commit', '-qm', 'b'], {
    cwd: repo,
  });
  await cli(['create', repo, '--name', id, '--quiet']);
  // 100,000 files written by "the repo's tests", in 100 folders.
  await cli([
    'exec',
    id,
    '--timeout',
    '600',
    '--',
    'sh',
    '-c',
    // modified: every file of the checkout rewritten (a new mtime and ctime).
    SHAPE === 'modified' ? 'sleep 1; find out -type f -exec touch {} +' : writeFiles,
  ]);
  // 1,000 commands in the log, as exec appends them (a real exec each would take minutes).
  const { recordCommand } = await import(COMMAND_LOG);
  for (let i = 0; i < COMMANDS; i += 1)
    await recordCommand(id, {
      via: 'exec',
      command: ['npm', 'test', '--', `--shard=${i}`],
      user: '1000:1000',
      startedAt: new Date().toISOString(),
      durationMs: 1234,
      exitCode: 0,
      timedOut: false,
      outOfMemory: false,
      stdoutBytes: 4096,
      stderrBytes: 0,
    });

  // The report's own cost: a child loads the lifecycle, notes its peak RSS, makes the report.
  // held: what the finished report keeps (heap after a full GC; its JSON goes out piece by piece);
  // grew: peak RSS growth, which also counts garbage V8's young generation holds until it collects.
  // By default a new folder of more than 100 entries is one row with its counts; --all-files
  // (allFiles) lists every file: both are measured, the goal is the default's.
  const probe = (allFiles) => `
    const { sandboxReport } = await import(${JSON.stringify(LIFECYCLE)});
    const { writeJson } = await import(${JSON.stringify(JSON_STREAM)});
    const { Writable } = await import('node:stream');
    globalThis.gc();
    const heap = process.memoryUsage().heapUsed;
    const before = process.resourceUsage().maxRSS;
    const start = performance.now();
    const report = await sandboxReport(${JSON.stringify(id)}, { allFiles: ${allFiles} });
    // As report --json writes it: piece by piece to stdout (here a sink that counts).
    let written = 0;
    const sink = new Writable({ write(chunk, _encoding, done) { written += chunk.length; done(); } });
    await writeJson(sink, report);
    const ms = performance.now() - start;
    const grew = (process.resourceUsage().maxRSS - before) / 1024;
    globalThis.gc();
    const held = (process.memoryUsage().heapUsed - heap) / 1e6;
    const entries = report.changes.${SHAPE}.reduce((n, f) => n + 1 + (f.contents ? f.contents.files + f.contents.directories + f.contents.symlinks + f.contents.other : 0), 0);
    console.log(JSON.stringify({ ms, grew, held, entries, rows: report.changes.${SHAPE}.length, commands: report.commands.entries.length, bytes: written }));
  `;
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const measure = async (allFiles) => {
    const samples = [];
    for (let i = 0; i < 5; i += 1) {
      const { stdout } = await run(
        process.execPath,
        ['--expose-gc', '--input-type=module', '-e', probe(allFiles)],
        {
          env: ENV,
          maxBuffer: 1 << 28,
        },
      );
      samples.push(JSON.parse(stdout));
    }
    return {
      ms: median(samples.map((s) => s.ms)),
      grew: median(samples.map((s) => s.grew)),
      held: median(samples.map((s) => s.held)),
      ...samples[0],
    };
  };
  const summarised = await measure(false);
  const every = await measure(true);
  // The whole command, as a user runs it.
  const whole = spawnSync('/usr/bin/time', ['-f', '%e %M', process.execPath, BIN, 'report', id, '--json'], {
    env: ENV,
    maxBuffer: 1 << 28,
    encoding: 'utf8',
  });
  const [wall, rssKb] = whole.stderr.trim().split('\n').at(-1).split(' ').map(Number);
  console.log(
    `load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `report of a box with ${summarised.entries} entries ${SHAPE} (${FILES} files asked) and ${summarised.commands} commands`,
  );
  const ok = (value, goal) => (value < goal ? 'ok' : 'OVER');
  for (const [name, m] of [
    [`default (${rowsOf(summarised)})`, summarised],
    [`--all-files (${rowsOf(every)})`, every],
  ]) {
    console.log(`${name}: JSON ${(m.bytes / 1e6).toFixed(1)} MB`);
    console.log(`  report made in       ${m.ms.toFixed(0)} ms (goal < 2000 ms)   ${ok(m.ms, 2000)}`);
    console.log(
      `  memory it holds      ${m.held.toFixed(1)} MB, the report (goal < 50 MB)   ${ok(m.held, 50)}`,
    );
    console.log(
      `  peak RSS growth      ${m.grew.toFixed(1)} MB (V8's uncollected garbage included; goal < 50 MB)   ${ok(m.grew, 50)}`,
    );
  }
  console.log(
    `whole 'report --json' ${(wall * 1000).toFixed(0)} ms, peak RSS ${(rssKb / 1024).toFixed(0)} MB (node itself included)`,
  );
} finally {
  await cli(['destroy', id, '--quiet']).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
}
