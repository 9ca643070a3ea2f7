// Issue 13.4: what scripts read from `ca-sandbox ls`, and the help and usage lines around it.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BIN,
  dockerReachable,
  forceRemoveSandbox,
  LIFECYCLE_BUILT,
  LOCAL_IMAGES_ENV,
  remainingObjects,
  runBin,
} from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();

describe.skipIf(!READY)('ls for scripts (real engine)', () => {
  const prefix = `sbx-${randomUUID().slice(0, 8)}`;
  const ids = [`${prefix}-a`, `${prefix}-b`];
  const repo = mkdtempSync(join(tmpdir(), 'ca-sbx-ls-'));

  beforeAll(async () => {
    writeFileSync(join(repo, 'README.md'), 'ls fixture\n');
    for (const id of ids) {
      const created = await runBin(['create', repo, '--name', id, '-q']);
      expect(created.code, created.stderr).toBe(0);
    }
  }, 120_000);

  afterAll(() => {
    for (const id of ids) forceRemoveSandbox(id);
    rmSync(repo, { recursive: true, force: true });
  });

  it('ls -q prints the ids, one per line, and nothing else', async () => {
    const result = await runBin(['ls', '-q', '--filter', `id=${prefix}`]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(`${ids.join('\n')}\n`);
  });

  it('ls --json and --format json print the records', async () => {
    for (const args of [['--json'], ['--format', 'json']]) {
      const result = await runBin(['ls', ...args, '--filter', `id=${prefix}`]);
      expect(result.code).toBe(0);
      const records = JSON.parse(result.stdout) as { id: string; status: string; network: string }[];
      expect(records.map((r) => r.id)).toEqual(ids);
      expect(records[0]).toMatchObject({ status: 'running', network: 'offline' });
    }
  });

  it('--format renders a docker-style template; table adds a header', async () => {
    const plain = await runBin([
      'ls',
      '--format',
      '{{.ID}}\\t{{.Status}}\\t{{.Runtime}}',
      '--filter',
      `id=${prefix}`,
    ]);
    expect(plain.stdout).toBe(ids.map((id) => `${id}\trunning\trunc\n`).join(''));
    const table = await runBin([
      'ls',
      '--format',
      'table {{.ID}}\\t{{.Network}}',
      '--filter',
      `id=${prefix}-a`,
    ]);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NETWORK$/);
    expect(table.stdout.split('\n')[1]).toMatch(new RegExp(`^${ids[0]}\\s+offline$`));
  });

  it('filters AND different keys and OR a repeated one', async () => {
    const ls = async (...filters: string[]) =>
      (await runBin(['ls', '-q', ...filters.flatMap((f) => ['--filter', f])])).stdout
        .split('\n')
        .filter(Boolean);
    expect(await ls(`id=${prefix}`, 'status=running', 'runtime=runc', 'network=offline')).toEqual(ids);
    expect(await ls(`id=${prefix}`, 'status=exited')).toEqual([]);
    expect(await ls(`id=${prefix}`, 'status=exited', 'status=running')).toEqual(ids);
    expect(await ls(`id=${prefix}`, 'network=clone-then-cut')).toEqual([]);
  });

  it('an unknown filter key or template field is a usage error (exit 2) before docker is asked', async () => {
    const key = await runBin(['ls', '--filter', 'label=x']);
    expect(key.code).toBe(2);
    expect(key.stderr).toBe(
      'error: invalid value for --filter: unknown key "label"\nhint: keys: id, status, network, runtime, provider, repo\n',
    );
    const field = await runBin(['ls', '--format', '{{.Labels}}', '--json']);
    expect(field.code).toBe(2);
    expect(JSON.parse(field.stderr).error.code).toBe('INVALID_FORMAT');
    const noDocker = await runBin(['ls', '--filter', 'nope'], { DOCKER_HOST: 'unix:///nonexistent.sock' });
    expect(noDocker.code).toBe(2);
    // A template beside --json would be dropped silently: refused instead.
    const both = await runBin(['ls', '--format', '{{.ID}}', '--json']);
    expect(both.code).toBe(2);
    expect(JSON.parse(both.stderr).error.code).toBe('INVALID_OPTIONS');
  });

  it('rm of several ids with one already gone removes the others, names the gone one, exit 2', async () => {
    const gone = `${prefix}-gone`;
    const result = await runBin(['rm', gone, ids[0] as string]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`^removed container:ca-sbx-${ids[0]}$`, 'm'));
    expect(result.stderr).toMatch(new RegExp(`^error: sandbox '${gone}': no such sandbox`, 'm'));
    expect(remainingObjects(ids[0] as string)).toEqual([]);
  });

  it('ls -q | xargs ca-sandbox rm removes exactly those sandboxes (the one left)', () => {
    const bin = `'${process.execPath}' '${BIN}'`;
    const output = execFileSync('sh', ['-c', `${bin} ls -q --filter id=${prefix} | xargs ${bin} rm`], {
      env: { ...process.env, ...LOCAL_IMAGES_ENV, NO_COLOR: '1' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(output).toBe('');
    for (const id of ids) expect(remainingObjects(id)).toEqual([]);
  });
});

describe.skipIf(!LIFECYCLE_BUILT)('help and usage lines', () => {
  it('every subcommand help lists the global options', async () => {
    for (const command of ['create', 'ls', 'exec', 'destroy', 'cp']) {
      const help = await runBin([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Global Options:$/m);
      for (const flag of ['--json', '-q, --quiet', '--verbose', '--no-color'])
        expect(help.stdout).toContain(flag);
    }
  });

  it("commander's own errors are one line and a hint, never a literal \\n", async () => {
    const unknown = await runBin(['lss']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("error: unknown command 'lss'\nhint: Did you mean ls?\n");
    const option = await runBin(['ls', '--jsn']);
    expect(option.code).toBe(2);
    expect(option.stderr).not.toContain('\\n');
    expect(option.stderr).toMatch(/^error: unknown option '--jsn'\nhint: Did you mean --json\?\n$/);
  });
});
