import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILD_LABEL_REPO, CONFINEMENT_MARKER, installConfinementRows } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FixtureRepo, removeImages } from '../test/fixture-volume.js';
import { INSTALL_CODE_MARKER, installCodeRepo as postinstall } from '../test/install-code.js';
import {
  DepsImageTooLargeError,
  ImageBuildError,
  ImageBuildTimeoutError,
  type PrepareImageOptions,
  prepareImage,
} from './index.js';
import { sanitiseRepoName } from './tag.js';
import { TOOLCHAIN_MARKER } from './toolchain.js';

const baseImages = { node: 'ca-sbx-base:node', plain: 'ca-sbx-base:debian' };
const caCertificates = process.env.CA_SANDBOX_CA_CERTS ?? process.env.NODE_EXTRA_CA_CERTS;
const run = `t${randomUUID().slice(0, 6)}`;
const images = new Set<string>();
const repos: FixtureRepo[] = [];

/** Runs prepareImage on a fresh fixture; returns the result or the error, the log and the build containers seen. */
async function attempt(tree: Record<string, string>, options: Partial<PrepareImageOptions>) {
  const fixture = await new FixtureRepo().start(tree);
  repos.push(fixture);
  const lines: string[] = [];
  const started = Date.now();
  try {
    const result = await prepareImage({
      containerId: fixture.container,
      repoName: `build-limits/${run}`,
      source: `/test/build-limits/${run}`,
      policy: 'clone-then-cut',
      builder: 'builtin',
      baseImages,
      ...(caCertificates ? { caCertificates } : {}),
      onLog: (line) => lines.push(line),
      ...options,
    });
    images.add(result.image);
    return { result, error: undefined, lines, ms: Date.now() - started, fixture };
  } catch (error) {
    return { result: undefined, error, lines, ms: Date.now() - started, fixture };
  } finally {
    // Whatever the outcome, the tag must not be left to a half-built image of ours.
    for (const line of lines) {
      const tag = /^install for (ca-sbx:\S+)/.exec(line)?.[1];
      if (tag) images.add(tag);
    }
  }
}

/**
 * Build containers of this file's builds that still exist, running or not. Every step of our
 * Dockerfile carries the build labels (its first instruction), so its RUN containers do too; the
 * builder's own `Running in <id>` lines are no longer in the log (framing is dropped).
 */
async function buildContainersLeft(): Promise<string[]> {
  const repo = sanitiseRepoName(`build-limits/${run}`);
  const listed = await docker(['ps', '--all', '--quiet', '--filter', `label=${BUILD_LABEL_REPO}=${repo}`]);
  return listed.stdout.split('\n').filter((line) => line.trim() !== '');
}

afterEach(async () => {
  await Promise.all(repos.splice(0).map((fixture) => fixture.cleanup()));
});
afterAll(async () => removeImages(images));

describe('prepareImage: build limits (real engine)', () => {
  it('the install step checks its own confinement before the repo code runs; a forged line changes nothing', async () => {
    // The repo's code prints a line claiming root, no limits: the step's own line came first.
    const forged = `${CONFINEMENT_MARKER};Uid: 0 0 0 0;Gid: 0 0 0 0;CapEff: 000001ffffffffff;NoNewPrivs: 0`;
    const { result, error, lines } = await attempt(postinstall(`echo '${forged}'`), {
      buildProcesses: 2048,
      buildFileSize: 1024 ** 3,
    });
    expect(error).toBeUndefined();
    expect(result?.image).toBeTruthy();
    const marked = lines.filter((line) => line.startsWith(CONFINEMENT_MARKER));
    expect(marked.at(-1)).toBe(forged);
    const own = marked[0] ?? '';
    expect(lines.indexOf(own)).toBeLessThan(lines.indexOf(INSTALL_CODE_MARKER));
    const rows = installConfinementRows(own, { fileSize: 1024 ** 3, processes: 2048 });
    expect(rows.filter((row) => !row.pass)).toEqual([]);
    expect(own).toContain(';Max processes 2048 2048 processes');
    expect(lines).toContain(
      'install step confined: non-root-user, no-new-privileges, cap-drop-all, seccomp-confined, no-core-dumps, file-size-limit, process-limit (checked from inside it)',
    );
    // Once, between the step's toolchain line and the confinement check, then the commit's line.
    const committing = lines.filter((line) => line.startsWith('the install is done'));
    expect(committing).toHaveLength(1);
    const at = lines.indexOf(committing[0] ?? '');
    expect(at).toBeGreaterThan(lines.findIndex((line) => line.startsWith(TOOLCHAIN_MARKER)));
    const confined = lines.findIndex((line) => line.startsWith('install step confined'));
    expect(at).toBeLessThan(confined);
    const saved = lines.findIndex((line) => line.startsWith("the install's layer is saved: the deps image"));
    expect(saved).toBeGreaterThan(confined);
  });

  it('a memory bomb in the install code hits the memory limit and fails the build with a clear error', async () => {
    const bomb = 'const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))';
    const { error, lines, ms } = await attempt(postinstall('true', { js: bomb }), { buildMemory: '128m' });
    console.info(`memory bomb under 128m: failed after ${ms} ms: ${(error as Error).message}`);
    expect(error).toBeInstanceOf(ImageBuildError);
    const failure = error as ImageBuildError;
    expect(failure.kind).toBe('failure');
    expect(failure.message).toMatch(
      /^dependency install failed \(the install step of ca-sbx:build-limits-t[0-9a-f]{6}-\S+ exited \d+\): /,
    );
    expect(failure.message).toMatch(/memory limit 128m/);
    // The repo's install code ran, and it is what the limit killed.
    expect(lines).toContain(INSTALL_CODE_MARKER);
    expect(`${lines.join('\n')}\n${failure.message}`).toMatch(/SIGKILL|Killed/);
    // SIGKILL's status, from the engine's wait of the install container.
    expect(failure.exitCode).toBe(137);
    expect(await buildContainersLeft()).toEqual([]);
  });

  it('install code that never ends is stopped at buildTimeoutMs; no build container is left behind', async () => {
    const { error, lines, ms } = await attempt(postinstall('sleep 600'), {
      // pnpm is installed first (a download); then the repo's code sleeps until the limit.
      buildTimeoutMs: 90_000,
    });
    console.info(`sleep 600 with buildTimeoutMs 90000: failed after ${ms} ms: ${(error as Error).message}`);
    expect(error).toBeInstanceOf(ImageBuildTimeoutError);
    const timeout = error as ImageBuildTimeoutError;
    expect(timeout).toMatchObject({ kind: 'failure', code: 'IMAGE_BUILD_TIMEOUT', timeoutMs: 90_000 });
    expect(timeout.message).toMatch(/ran past the time limit of 90 s/);
    expect(lines).toContain(INSTALL_CODE_MARKER);
    expect(await buildContainersLeft()).toEqual([]);
    // No image was tagged for the stopped build.
    expect((await docker(['image', 'ls', '--quiet', timeout.image])).stdout.trim()).toBe('');
  });

  it('proxies from the docker client config.json (with credentials) do not reach the install', async () => {
    const config = await mkdtemp(join(tmpdir(), 'ca-sbx-docker-config-'));
    const saved = process.env.DOCKER_CONFIG;
    const secret = `secret${randomUUID().slice(0, 8)}`;
    await writeFile(
      join(config, 'config.json'),
      JSON.stringify({
        proxies: {
          default: {
            httpProxy: `http://user:${secret}@proxy.invalid:3128`,
            httpsProxy: `http://user:${secret}@proxy.invalid:3128`,
            noProxy: `${secret}.invalid`,
            ftpProxy: `http://user:${secret}@proxy.invalid:21`,
            allProxy: `socks5://user:${secret}@proxy.invalid:1080`,
          },
        },
      }),
    );
    process.env.DOCKER_CONFIG = config;
    try {
      const script =
        "node -e \"require('fs').writeFileSync('/deps/src/proxy-env', JSON.stringify(process.env))\"";
      const { result, error } = await attempt(postinstall(script), {});
      expect(error).toBeUndefined();
      const env = (
        await docker(['run', '--rm', '--network', 'none', result?.image ?? '', 'cat', '/deps/src/proxy-env'])
      ).stdout;
      expect(env).not.toContain(secret);
      expect(env).not.toContain('proxy.invalid');
      const history = (
        await docker(['history', '--no-trunc', '--format', '{{.CreatedBy}}', result?.image ?? ''])
      ).stdout;
      expect(history).not.toContain(secret);
    } finally {
      if (saved === undefined) delete process.env.DOCKER_CONFIG;
      else process.env.DOCKER_CONFIG = saved;
      await rm(config, { recursive: true, force: true });
    }
  });

  it('an install that keeps writing is stopped near the deps cap; no image, no untagged step, no container', async () => {
    // 16 MiB every 0.2 s up to 1 GiB: the host-side watch must stop it long before the end.
    const fill =
      'i=0; while [ $i -lt 64 ]; do head -c 16777216 /dev/zero > /deps/src/fill-$i; i=$((i+1)); sleep 0.2; done';
    const { error, ms } = await attempt(postinstall(fill), { maxDepsSize: 64 * 1024 ** 2 });
    console.info(`fill under a 64 MiB cap: failed after ${ms} ms: ${(error as Error).message}`);
    expect(error).toBeInstanceOf(DepsImageTooLargeError);
    const failure = error as DepsImageTooLargeError;
    expect(failure).toMatchObject({ kind: 'failure', code: 'DEPS_IMAGE_TOO_LARGE', during: 'install' });
    expect(failure.message).toContain('over the deps image cap of 64 MiB');
    expect(failure.seenBytes).toBeLessThan(1024 ** 3);
    expect((await docker(['image', 'ls', '--quiet', failure.image])).stdout.trim()).toBe('');
    const dephash = failure.image.split('-').at(-1) ?? '';
    const left = await docker([
      'image',
      'ls',
      '--all',
      '--quiet',
      '--filter',
      `label=ca.sandbox.build.dephash=${dephash}`,
    ]);
    expect(left.stdout.trim()).toBe('');
    expect(await buildContainersLeft()).toEqual([]);
  });

  it('an install that writes past the cap at once is refused on the image, which is removed', async () => {
    const { error } = await attempt(postinstall('head -c 100000000 /dev/zero > /deps/src/blob'), {
      maxDepsSize: 64 * 1024 ** 2,
    });
    expect(error, String((error as Error | undefined)?.message)).toBeInstanceOf(DepsImageTooLargeError);
    const failure = error as DepsImageTooLargeError;
    expect(failure.message).toContain('64 MiB');
    expect(failure.seenBytes).toBeGreaterThan(64 * 1024 ** 2);
    expect((await docker(['image', 'ls', '--quiet', failure.image])).stdout.trim()).toBe('');
  });

  it('the install runs with no_new_privs and finds no setuid or setgid file to run', async () => {
    const probe =
      'grep NoNewPrivs /proc/self/status > /deps/src/probe; find / -xdev -type f \\( -perm -4000 -o -perm -2000 \\) >> /deps/src/probe 2>/dev/null; su -c id root < /dev/null >> /deps/src/probe 2>&1; echo end >> /deps/src/probe';
    const { result, error } = await attempt(postinstall(probe), {});
    expect(error).toBeUndefined();
    const seen = (
      await docker(['run', '--rm', '--network', 'none', result?.image ?? '', 'cat', '/deps/src/probe'])
    ).stdout;
    expect(seen).toMatch(/^NoNewPrivs:\s+1\n/);
    expect(seen).not.toMatch(/^\//m);
    expect(seen).not.toMatch(/uid=0/);
    expect(seen).toMatch(/end\n$/);
  });
});
