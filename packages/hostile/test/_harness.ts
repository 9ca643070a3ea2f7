import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { dockerInfo } from '@ca-sandbox/docker';
import type { ExecResult } from '@ca-sandbox/lifecycle';
import { execa } from 'execa';
import { expect } from 'vitest';

const here = new URL('.', import.meta.url).pathname;
export const REPO_ROOT = resolve(here, '../../..');
export const BIN = join(REPO_ROOT, 'packages/cli/bin/ca-sandbox.js');
export const FIXTURES = resolve(here, '../fixtures');

/** runc always; runsc when the engine has it registered (the suite runs under both). */
export const RUNTIMES: ('runc' | 'runsc')[] = (
  await dockerInfo().catch(() => ({ runtimes: [] as string[] }))
).runtimes.includes('runsc')
  ? ['runc', 'runsc']
  : ['runc'];

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
}

/** Runs the real bin, the way a user or an agent does. */
export async function cli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 300_000,
): Promise<CliResult> {
  const result = await execa(process.execPath, [BIN, ...args], {
    reject: false,
    encoding: 'buffer',
    stdin: 'ignore',
    timeout: timeoutMs,
    env: { NO_COLOR: '1', ...env },
  });
  const stdoutBytes = Buffer.from(result.stdout as Uint8Array);
  return {
    exitCode: result.exitCode ?? -1,
    stdout: stdoutBytes.toString('utf8'),
    stderr: Buffer.from(result.stderr as Uint8Array).toString('utf8'),
    stdoutBytes,
  };
}

export function parseJson<T>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(
      `not JSON (exit ${result.exitCode}): ${result.stdout.slice(0, 400)} ${result.stderr.slice(0, 400)}`,
    );
  }
}

export interface SandboxRecord {
  id: string;
  container: string;
  volume: string;
  image: string;
  runtime: string;
  network: string;
}

const live = new Set<string>();

/** `ca-sandbox create <source> --json`, remembered for teardown. */
export async function createBox(
  source: string,
  options: { runtime?: string; network?: string; extra?: string[]; env?: Record<string, string> } = {},
): Promise<SandboxRecord> {
  const name = `hostile-${randomUUID().slice(0, 8)}`;
  const args = ['create', source, '--json', '--name', name, '--network', options.network ?? 'offline'];
  if (options.runtime) args.push('--runtime', options.runtime);
  live.add(name);
  const result = await cli([...args, ...(options.extra ?? [])], options.env);
  expect(result.exitCode, result.stderr).toBe(0);
  return parseJson<SandboxRecord>(result);
}

/** `ca-sandbox exec <id> --json -- argv`: the exec contract, whatever the command's exit code. */
export async function execBox(id: string, argv: string[], flags: string[] = []): Promise<ExecResult> {
  const result = await cli(['exec', id, '--json', ...flags, '--', ...argv]);
  const parsed = parseJson<ExecResult>(result);
  expect(result.exitCode).toBe(parsed.exitCode);
  return parsed;
}

export async function destroyBox(id: string): Promise<void> {
  const result = await cli(['destroy', id, '--json']);
  expect(result.exitCode, result.stderr).toBe(0);
  live.delete(id);
}

/** Destroys whatever a failed test left; used in afterAll. */
export async function destroyLeftovers(): Promise<void> {
  for (const id of live) await cli(['destroy', id]);
  live.clear();
}

/**
 * A file on the HOST that no box may touch: after each attack it must have the same content and
 * be alone in its directory.
 */
export class HostCanary {
  private constructor(
    readonly dir: string,
    readonly file: string,
    readonly content: string,
  ) {}

  static async create(): Promise<HostCanary> {
    const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-'));
    const file = join(dir, 'canary.txt');
    const content = `canary ${randomUUID()}\n`;
    await writeFile(file, content, { mode: 0o644 });
    return new HostCanary(dir, file, content);
  }

  async assertUntouched(): Promise<void> {
    expect(await readdir(this.dir)).toEqual(['canary.txt']);
    expect(await readFile(this.file, 'utf8')).toBe(this.content);
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Lines of a fixture script's report that claim an escape. */
export function escapes(output: string): string[] {
  return output.split('\n').filter((line) => /ESCAPED|REACHED/.test(line));
}

/** Every container, volume and network labeled with sandbox `id`, as `<kind>:<name>`. */
export async function labeledLeft(id: string): Promise<string[]> {
  const { docker } = await import('@ca-sandbox/docker/cli');
  const filters = ['--filter', 'label=ca.sandbox=1', '--filter', `label=ca.sandbox.id=${id}`];
  const names = async (argv: string[], kind: string) =>
    (await docker(argv)).stdout
      .split('\n')
      .filter(Boolean)
      .map((name) => `${kind}:${name}`);
  return [
    ...(await names(['container', 'ls', '--all', ...filters, '--format', '{{.Names}}'], 'container')),
    ...(await names(['volume', 'ls', ...filters, '--format', '{{.Name}}'], 'volume')),
    ...(await names(['network', 'ls', ...filters, '--format', '{{.Name}}'], 'network')),
  ];
}

/** A unique sandbox name for a test that drives `create` itself (remember it for cleanup). */
export function uniqueName(prefix = 'hostile'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * This host's first non-loopback IPv4 address (not a docker bridge): where a test server published
 * with a mapped port is reached the way a real git host is, through the sandbox's egress gateway.
 */
export async function hostAddress(): Promise<string> {
  const { networkInterfaces } = await import('node:os');
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (name === 'docker0' || name.startsWith('br-') || name.startsWith('veth')) continue;
    const v4 = addresses?.find((info) => info.family === 'IPv4' && !info.internal);
    if (v4) return v4.address;
  }
  throw new Error('no non-loopback IPv4 address on this host');
}
