import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LABEL_ID, SANDBOX_FILTER } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { destroySandbox } from '../src/teardown.js';

/** A unique sandbox id for one test, remembered for cleanup. */
export function uniqueId(created?: Set<string>): string {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  created?.add(id);
  return id;
}

/** Removes every object of these sandbox ids; a teardown test failing must not leak. */
export async function destroyAll(ids: Iterable<string>): Promise<void> {
  for (const id of ids) {
    await destroySandbox(id).catch(() => undefined);
  }
}

/** Names of the objects labeled with `id`, by kind. */
export async function labeledObjects(id: string): Promise<string[]> {
  const flags = ['--filter', SANDBOX_FILTER, '--filter', `label=${LABEL_ID}=${id}`];
  const list = async (argv: string[]) =>
    (await docker(argv)).stdout
      .split('\n')
      .filter(Boolean)
      .map((name) => `${argv[0]}:${name}`);
  return [
    ...(await list(['container', 'ls', '-a', ...flags, '--format', '{{.Names}}'])),
    ...(await list(['volume', 'ls', ...flags, '--format', '{{.Name}}'])),
    ...(await list(['network', 'ls', ...flags, '--format', '{{.Name}}'])),
  ];
}

export async function tempDir(prefix = 'ca-lc-int-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function removeDir(dir: string | undefined): Promise<void> {
  if (dir) await rm(dir, { recursive: true, force: true });
}

/**
 * A git repo on the host made by the TEST (our own trusted fixture, not the product): files
 * committed on branch main. Hostile config is written afterwards by the caller, without git.
 */
export async function makeGitRepo(dir: string, files: Record<string, string>): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=test', ...args], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', HOME: dir },
      stdio: 'pipe',
    });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'fixture');
  return dir;
}

/**
 * An address of this host that containers reach (its first non-loopback IPv4 outside docker's
 * bridges): test servers publish their port there, so a clone through the egress gateway (which
 * sits on a network of its own) reaches them as it would a real git host.
 */
export function hostAddress(): string {
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (name === 'docker0' || name.startsWith('br-') || name.startsWith('veth')) continue;
    const v4 = addresses?.find((info) => info.family === 'IPv4' && !info.internal);
    if (v4) return v4.address;
  }
  throw new Error('no non-loopback IPv4 address on this host');
}
