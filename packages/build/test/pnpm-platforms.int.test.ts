import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostAddress, Mirror, type NpmPackage, npmTree } from './mirrors.js';

// Issue 28.3: optional packages built for other platforms, with an npm registry of our own. The
// install does what the repo's pinned pnpm does on an x64 Linux machine: it skips the arm64/musl
// build of a dependency (whose tarball the registry does not even have), unless the repo's own
// `supportedArchitectures` asks for it, and then it fails as pnpm fails there, the 404 named.
// Through the CLI bin (it needs the built packages: `pnpm build`).
const BIN = fileURLToPath(new URL('../../cli/bin/ca-sandbox.js', import.meta.url));
const PNPM = '9.15.9';
const run = promisify(execFile);

function runBin(args: string[], env: Record<string, string>) {
  return run(process.execPath, [BIN, ...args], {
    env: { ...process.env, NO_COLOR: '1', ...env },
    maxBuffer: 64 * 1024 * 1024,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof error.code === 'number' ? error.code : 1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
}

const platform = (cpu: string, libc: string, missingTarball = false): NpmPackage => ({
  manifest: {
    name: `@fixture/native-linux-${cpu}-${libc}`,
    version: '1.0.0',
    os: ['linux'],
    cpu: [cpu],
    libc: [libc === 'gnu' ? 'glibc' : libc],
    main: 'index.js',
  },
  files: { 'index.js': `module.exports = ${JSON.stringify(`${cpu}-${libc}`)};\n` },
  missingTarball,
});

describe('optional packages of other platforms (pnpm, a registry of our own, through the bin)', () => {
  const work = mkdtempSync(join(tmpdir(), 'ca-sbx-pnpm-platforms-'));
  const ids: string[] = [];
  let mirror: Mirror;
  let env: Record<string, string>;

  beforeAll(async () => {
    // The pinned pnpm comes from the registry too: the real one, packed from npm.
    const packDir = join(work, 'pack');
    mkdirSync(packDir);
    const packed = await run('npm', ['pack', '--silent', `pnpm@${PNPM}`], { cwd: packDir });
    const tarball = readFileSync(join(packDir, packed.stdout.trim()));
    await run('tar', ['-xzf', packed.stdout.trim(), 'package/package.json'], { cwd: packDir });
    const pnpmManifest = JSON.parse(readFileSync(join(packDir, 'package/package.json'), 'utf8'));
    const tree = npmTree(
      [
        {
          manifest: {
            name: 'fixture-native',
            version: '1.0.0',
            main: 'index.js',
            optionalDependencies: {
              '@fixture/native-linux-x64-gnu': '1.0.0',
              '@fixture/native-linux-arm64-musl': '1.0.0',
            },
          },
          files: {
            'index.js':
              "for (const p of ['@fixture/native-linux-x64-gnu', '@fixture/native-linux-arm64-musl']) { try { module.exports = require(p); break; } catch {} }\n",
          },
        },
        platform('x64', 'gnu'),
        // Named by the packument, absent from the registry: fetching it is a 404.
        platform('arm64', 'musl', true),
      ],
      [{ manifest: pnpmManifest, tarball }],
    );
    mirror = await new Mirror('npm', tree, 'npm').start(hostAddress());
    const config = join(work, 'config.json');
    writeFileSync(config, JSON.stringify({ mirrors: { npmRegistry: mirror.url } }));
    env = {
      CA_SANDBOX_CONFIG: config,
      CA_SANDBOX_NPM_REGISTRY: '',
      CA_SANDBOX_BASE_IMAGE_NODE: 'ca-sbx-base:node',
    };
  }, 300_000);

  afterAll(async () => {
    for (const id of ids) await runBin(['destroy', id], env ?? {});
    await mirror?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  function repo(name: string, pnpmSettings?: Record<string, unknown>): string {
    const dir = join(work, name);
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name,
        version: '1.0.0',
        private: true,
        packageManager: `pnpm@${PNPM}`,
        dependencies: { 'fixture-native': '1.0.0' },
        scripts: { test: "node -e \"console.log('native:', require('fixture-native'))\"" },
        ...(pnpmSettings ? { pnpm: pnpmSettings } : {}),
      }),
    );
    return dir;
  }

  it("skips the other platforms' builds, as pnpm does on x64 Linux; the repo's test runs", async () => {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const created = await runBin(
      ['create', repo('platforms'), '--name', id, '--network', 'clone-then-cut', '--json'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ provider: 'node', depsInstalled: true });
    // The pin ran, not another pnpm.
    expect(created.stderr + created.stdout).not.toMatch(/FETCH_404/);
    const test = await runBin(['exec', id, '--', 'pnpm', 'test'], env);
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toContain('native: x64-gnu');
    const version = await runBin(['exec', id, '--', 'pnpm', '--version'], env);
    expect(version.stdout.trim()).toBe(PNPM);
    const arm = await runBin(
      ['exec', id, '--', 'sh', '-c', 'ls node_modules/.pnpm | grep -c arm64 || true'],
      env,
    );
    expect(arm.stdout.trim()).toBe('0');
  }, 900_000);

  it('a repo whose supportedArchitectures asks for arm64/musl gets the 404 pnpm gets, named', async () => {
    const id = `sbx-${randomUUID().slice(0, 8)}`;
    ids.push(id);
    const created = await runBin(
      [
        'create',
        repo('all-platforms', {
          supportedArchitectures: { os: ['linux'], cpu: ['x64', 'arm64'], libc: ['glibc', 'musl'] },
        }),
        '--name',
        id,
        '--network',
        'clone-then-cut',
      ],
      env,
    );
    expect(created.code).toBe(1);
    expect(created.stderr).toMatch(/dependency install failed/);
    expect(created.stderr).toMatch(/ERR_PNPM_FETCH_404/);
    expect(created.stderr).toContain('native-linux-arm64-musl');
    // Nothing of it is left.
    const left = await docker(['ps', '-aq', '--filter', `label=ca.sandbox.id=${id}`]);
    expect(left.stdout.trim()).toBe('');
  }, 900_000);
});
