import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { goModule, Mirror } from './mirrors.js';

// End to end through the CLI bin (it needs the built packages: `pnpm build`).
const BIN = fileURLToPath(new URL('../../cli/bin/ca-sandbox.js', import.meta.url));
const GO_FIXTURE = fileURLToPath(new URL('./fixtures/go-mod/', import.meta.url));

interface BinResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The bin with the local base images (official names cannot be pulled here) and `env` on top. */
function runBin(args: string[], env: Record<string, string> = {}): Promise<BinResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        env: { ...process.env, CA_SANDBOX_BASE_IMAGE_GO: 'ca-sbx-base:go', NO_COLOR: '1', ...env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Every container, volume and network labeled with sandbox `id`. */
async function remainingObjects(id: string): Promise<string[]> {
  const filter = `label=ca.sandbox.id=${id}`;
  const out: string[] = [];
  for (const argv of [
    ['ps', '-aq', '--filter', filter],
    ['volume', 'ls', '-q', '--filter', filter],
    ['network', 'ls', '-q', '--filter', filter],
  ])
    out.push(...(await docker(argv)).stdout.split('\n').filter(Boolean));
  return out;
}

/** This host's first IPv4 address off loopback and off docker's bridges: where a LAN mirror would be. */
function hostAddress(): string {
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (name === 'docker0' || name.startsWith('br-') || name.startsWith('veth')) continue;
    const v4 = addresses?.find((info) => info.family === 'IPv4' && !info.internal);
    if (v4) return v4.address;
  }
  throw new Error('no IPv4 address off loopback on this host');
}

describe('a mirror named in the configuration file (real engine, through the bin)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-mirror-config-'));
  let mirror: Mirror | undefined;

  afterAll(async () => {
    await runBin(['destroy', id]);
    await mirror?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('reaches the install through the egress gateway: the install succeeds and egress shows it allowed', async () => {
    const greet = goModule('example.com/greet', 'v1.0.0', {
      'go.mod': 'module example.com/greet\n\ngo 1.22\n',
      'greet.go': 'package greet\n\nfunc Hello(name string) string { return "hello, " + name }\n',
    });
    // On this host's address: the gateway refuses private and host ranges unless the user named
    // them, as a configured mirror is.
    mirror = await new Mirror('goproxy', greet.tree).start(hostAddress());
    const repo = join(work, 'app');
    cpSync(GO_FIXTURE, repo, { recursive: true });
    writeFileSync(join(repo, 'go.sum'), greet.goSum);
    const config = join(work, 'config.json');
    writeFileSync(config, JSON.stringify({ mirrors: { goProxy: mirror.url } }));
    // The file alone names the mirror: no variable of the caller does.
    const env = { CA_SANDBOX_CONFIG: config, CA_SANDBOX_GOPROXY: '' };
    const shown = await runBin(['config', '--json'], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(mirror.url);

    const created = await runBin(
      ['create', repo, '--name', id, '--network', 'clone-then-cut', '--json'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ id, provider: 'go', depsInstalled: true });

    const egress = await runBin(['egress', id, '--json'], env);
    expect(egress.code, egress.stderr).toBe(0);
    const decisions = JSON.parse(egress.stdout) as { phase: string; destination: string; allowed: boolean }[];
    const fromMirror = decisions.filter(
      (row) => row.phase === 'install' && row.destination.startsWith(mirror?.url ?? '-'),
    );
    expect(fromMirror.length, egress.stdout).toBeGreaterThan(0);
    expect(fromMirror.every((row) => row.allowed)).toBe(true);

    const destroyed = await runBin(['destroy', id, '--json']);
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(await remainingObjects(id)).toEqual([]);
  }, 900_000);
});
