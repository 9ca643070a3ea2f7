import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// The library as the bin runs it (built): see the URL case for why it is called directly.
import { CheckoutTooLargeError, createSandbox, destroySandbox } from '@ca-sandbox/lifecycle';
import { execa } from 'execa';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, labeledLeft, RUNTIMES, uniqueName } from './_harness.js';

// A checkout bomb: a few KB of git objects whose trees name one blob thousands of times. The
// sandbox caps (--max-source-bytes 512m, --max-source-entries 200000 by default) must hold for
// what the checkout would write, not only for the folder or the pack that arrives.

/** Shell that builds the bomb in the current (empty) git repo: `levels` of `fanout` trees over one blob. */
const BOMB = (blobBytes: number, fanout: number, levels: number) =>
  [
    'set -e',
    `t=$(head -c ${blobBytes} /dev/zero | git hash-object -w --stdin)`,
    'kind=blob',
    `for level in $(seq 1 ${levels}); do`,
    `  t=$(for i in $(seq 1 ${fanout}); do`,
    '    if [ "$kind" = blob ]; then printf "100644 blob %s\\tf%04d\\n" "$t" "$i"; else printf "040000 tree %s\\td%04d\\n" "$t" "$i"; fi',
    '  done | git mktree)',
    '  kind=tree',
    'done',
    'c=$(git -c user.name=t -c user.email=t@example.invalid commit-tree "$t" -m bomb)',
    'git update-ref refs/heads/main "$c"',
  ].join('\n');

const dirs: string[] = [];
const GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

async function bombRepo(blobBytes: number, fanout: number, levels: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ca-hostile-bomb-'));
  dirs.push(dir);
  await execa('git', ['init', '-q', '-b', 'main', dir], { env: GIT_ENV });
  await execa('sh', ['-c', BOMB(blobBytes, fanout, levels)], { cwd: dir, env: GIT_ENV });
  return dir;
}

async function expectRefused(source: string, cap: RegExp, extra: string[] = []) {
  const name = uniqueName('bomb');
  const started = Date.now();
  const result = await cli(['create', source, '--json', '--name', name, ...extra]);
  const seconds = (Date.now() - started) / 1000;
  expect(result.exitCode, result.stderr).toBe(2);
  const error = JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}').error;
  expect(error.code).toBe('CHECKOUT_TOO_LARGE');
  expect(error.message).toMatch(cap);
  expect(await labeledLeft(name)).toEqual([]);
  return seconds;
}

afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('checkout bombs from a local directory', () => {
  it.each(RUNTIMES)(
    '4 GiB of one 1 MiB blob (16x16x16) is refused before any file is written (%s)',
    async (runtime) => {
      const repo = await bombRepo(1024 * 1024, 16, 3);
      const { stdout } = await execa('du', ['-sk', join(repo, '.git')]);
      expect(Number.parseInt(stdout, 10)).toBeLessThan(1024);
      const seconds = await expectRefused(repo, /--max-source-bytes 512 MiB/, ['--runtime', runtime]);
      expect(seconds).toBeLessThan(60);
    },
  );

  it('262144 entries of an empty blob (64x64x64) are refused at the entry cap', async () => {
    const repo = await bombRepo(0, 64, 3);
    await expectRefused(repo, /--max-source-entries 200000/);
  });

  it('the caps are configurable: 10100 entries (a folder of a few KB) over --max-source-entries 1000', async () => {
    const repo = await bombRepo(10, 100, 2);
    await expectRefused(repo, /--max-source-entries 1000\b/, ['--max-source-entries', '1000']);
  });
});

describe('a checkout bomb from a git URL (a git daemon in a container of ours)', () => {
  let server: StartedTestContainer;
  let url: string;

  beforeAll(async () => {
    const script = [
      'set -e',
      'export HOME=/tmp GIT_CONFIG_NOSYSTEM=1',
      'mkdir -p /tmp/srv && git init -q --bare -b main /tmp/srv/bomb.git && cd /tmp/srv/bomb.git',
      BOMB(1024 * 1024, 16, 3),
      'exec git daemon --verbose --reuseaddr --base-path=/tmp/srv --export-all --listen=0.0.0.0 --port=9418',
    ].join('\n');
    server = await new GenericContainer('ca-sbx-base:git')
      .withUser('1000:1000')
      .withLabels({ 'ca.hostile.test': 'git-server' })
      .withCommand(['sh', '-c', script])
      .withWaitStrategy(Wait.forLogMessage(/Ready to rumble/))
      .start();
    url = `git://${server.getIpAddress('bridge')}/bomb.git`;
  });
  afterAll(async () => {
    await server?.stop();
  });

  // Through the library, not the bin: the CLI clones URLs only through the egress gateway, which
  // (rightly) refuses every address of this machine and its docker networks, so a git host of ours
  // is reachable only by putting the clone helper on the server's bridge (`cloneNetwork`). The
  // measure-then-checkout step under test is the same code the bin runs.
  it('is refused with CHECKOUT_TOO_LARGE before the checkout, and nothing is left', async () => {
    const name = uniqueName('bomb');
    const error = await createSandbox({ source: url, name, cloneNetwork: 'bridge' }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    if (!error) await destroySandbox(name);
    expect(error).toBeInstanceOf(CheckoutTooLargeError);
    expect((error as CheckoutTooLargeError).code).toBe('CHECKOUT_TOO_LARGE');
    expect((error as Error).message).toMatch(/--max-source-bytes 512 MiB/);
    expect(await labeledLeft(name)).toEqual([]);
  });
});
