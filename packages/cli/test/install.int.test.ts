import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshShellEnv } from './_bin.js';

// Issue 13.10: the install lines of the READMEs are true. From a clone: the cli packs into one
// self-contained tarball (everything it loads is bundled, no runtime dependency), which installs
// globally without a registry and runs.
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const CLI = join(ROOT, 'packages/cli');
const BUILT = existsSync(join(CLI, 'dist/bundle/main.js'));
const work = mkdtempSync(join(tmpdir(), 'ca-sbx-install-'));
const prefix = join(work, 'prefix');
const bin = join(prefix, 'bin', 'ca-sandbox');
const home = join(work, 'home');

afterAll(() => rmSync(work, { recursive: true, force: true }));

function tarball(): string {
  const name = readdirSync(work).find((file) => file.endsWith('.tgz'));
  if (!name) throw new Error('no tarball');
  return join(work, name);
}

describe.skipIf(!BUILT)('npm pack of the cli and a global install into a temp prefix', () => {
  const env = () => freshShellEnv({ HOME: home, XDG_CONFIG_HOME: join(home, '.config') });

  beforeAll(() => {
    mkdirSync(home);
    execFileSync('pnpm', ['pack', '--pack-destination', work], { cwd: CLI, stdio: 'ignore' });
    execFileSync(
      'npm',
      ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', tarball()],
      { cwd: work, stdio: 'ignore', env: { ...process.env, npm_config_cache: join(work, 'npm-cache') } },
    );
  }, 180_000);

  it('the tarball has no runtime dependency, a LICENSE, and repository metadata', () => {
    const listing = execFileSync('tar', ['tzf', tarball()], { encoding: 'utf8' }).split('\n');
    expect(listing).toEqual(
      expect.arrayContaining([
        'package/LICENSE',
        'package/README.md',
        'package/bin/ca-sandbox.js',
        'package/dist/bundle/main.js',
      ]),
    );
    // tsc's unbundled output (which imports the workspace packages) stays out.
    expect(listing.filter((file) => /^package\/dist\/[^/]+\.js$/.test(file))).toEqual([]);
    const installed = JSON.parse(
      readFileSync(join(prefix, 'lib/node_modules/ca-sandbox/package.json'), 'utf8'),
    );
    expect(installed.dependencies ?? {}).toEqual({});
    expect(installed).toMatchObject({ license: 'MIT', repository: { directory: 'packages/cli' } });
    expect(existsSync(join(prefix, 'lib/node_modules/ca-sandbox/node_modules'))).toBe(false);
  });

  it('runs --version, config and doctor from the installed bin', () => {
    const version = spawnSync(bin, ['--version'], { encoding: 'utf8', env: env() });
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(CLI, 'package.json'), 'utf8')).version);
    const path = spawnSync(bin, ['config', 'path'], { encoding: 'utf8', env: env() });
    expect(path.stdout).toBe(`${join(home, '.config', 'ca-sandbox', 'config.json')}\n`);
    const doctor = spawnSync(bin, ['doctor', '--json'], { encoding: 'utf8', env: env(), timeout: 60_000 });
    // Exit 0, or 3 where a prerequisite is missing: either way the checklist ran, nothing crashed.
    expect([0, 3]).toContain(doctor.status);
    const report = JSON.parse(doctor.stdout) as { checks: { check: string }[] };
    expect(report.checks.map((check) => check.check)).toEqual(
      expect.arrayContaining(['configuration', 'docker', 'helper image']),
    );
    expect(doctor.stderr).not.toMatch(/Cannot find (module|package)/);
  });

  it('the exec fast path and its lazily loaded docker barrel work from the install', () => {
    // node by its path: with PATH emptied (no docker CLI), the bin's `env node` would not find it.
    // exec speaks the Engine API and needs no docker binary: pointed at an engine socket that is
    // not there, the installed fast path and its barrel answer with the prerequisite error.
    const missing = spawnSync(process.execPath, [bin, 'exec', 'no-such-box', '--', 'true'], {
      encoding: 'utf8',
      env: { ...env(), PATH: '/nonexistent', DOCKER_HOST: `unix://${join(work, 'no-engine.sock')}` },
    });
    expect(missing.status).toBe(125);
    expect(missing.stderr).toMatch(
      /^error: Docker is not available: the daemon does not answer at unix:\/\/\S*no-engine\.sock/m,
    );
    expect(missing.stderr).toMatch(/^hint: install Docker/m);
  });

  it('serves MCP (the bundled SDK) from the install', async () => {
    const client = new Client({ name: 'install-test', version: '0.0.0' });
    await client.connect(
      new StdioClientTransport({ command: bin, args: ['mcp'], env: env(), stderr: 'ignore' }),
    );
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('sandbox_create');
    } finally {
      await client.close();
    }
  });
});

describe('the release script on changesets', () => {
  it('checks metadata and the plugin version, then publishes every package in a dry run', () => {
    const result = spawnSync(
      process.execPath,
      [join(ROOT, 'scripts/release.mjs'), '--dry-run', '--skip-build'],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(result.status, result.stderr).toBe(0);
    const output = `${result.stdout}${result.stderr}`;
    for (const name of ['ca-sandbox', '@ca-sandbox/config', '@ca-sandbox/docker', '@ca-sandbox/lifecycle'])
      expect(output).toContain(`Skip publishing ${name}@`);
    expect(output).toContain('package metadata in sync');
  });

  it('the metadata check catches a package without its LICENSE', () => {
    const copy = mkdtempSync(join(tmpdir(), 'ca-sbx-meta-'));
    try {
      mkdirSync(join(copy, 'packages', 'x'), { recursive: true });
      writeFileSync(join(copy, 'package.json'), readFileSync(join(ROOT, 'package.json')));
      writeFileSync(join(copy, 'LICENSE'), readFileSync(join(ROOT, 'LICENSE')));
      writeFileSync(
        join(copy, 'packages', 'x', 'package.json'),
        JSON.stringify({ name: 'x', license: 'MIT' }),
      );
      const checked = spawnSync(
        process.execPath,
        [join(ROOT, 'scripts/package-metadata.mjs'), copy, '--check'],
        {
          encoding: 'utf8',
        },
      );
      expect(checked.status).toBe(1);
      expect(checked.stderr).toMatch(/packages\/x\/package\.json, packages\/x\/LICENSE/);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
