import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  dockerReachable,
  forceRemoveSandbox,
  freshShellEnv,
  LIFECYCLE_BUILT,
  remainingObjects,
  runBinWithExactEnv,
} from './_bin.js';

const READY = LIFECYCLE_BUILT && dockerReachable();
const WRITE_CONFIG = fileURLToPath(new URL('../../../scripts/write-config.mjs', import.meta.url));

interface ConfigJson {
  file: { path: string; source: string; exists: boolean };
  settings: { key: string; value: unknown; source: string; from?: string }[];
}

// Issue 13.2: after setup, a new shell (no CA_SANDBOX_* variable) must find the same settings.
describe.skipIf(!READY)('settings persist in the configuration file (fresh HOME, no CA_SANDBOX_*)', () => {
  const id = `sbx-${randomUUID().slice(0, 8)}`;
  const home = mkdtempSync(join(tmpdir(), 'ca-sbx-home-'));
  const repo = join(home, 'plain-repo');
  const env = freshShellEnv({
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'xdg-config'),
    XDG_DATA_HOME: join(home, 'xdg-data'),
  });
  const configFile = join(home, 'xdg-config', 'ca-sandbox', 'config.json');
  mkdirSync(repo);
  writeFileSync(join(repo, 'README.md'), 'plain fixture\n');

  afterAll(() => {
    forceRemoveSandbox(id);
    rmSync(home, { recursive: true, force: true });
  });

  it('without the file, the official base image is asked for and missing (exit 3)', async () => {
    const result = await runBinWithExactEnv(['create', repo, '--name', id, '--json'], env);
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stderr.trim().split('\n').at(-1) ?? '{}')).toMatchObject({
      error: { code: 'BASE_IMAGE_MISSING' },
    });
    expect(remainingObjects(id)).toEqual([]);
  });

  it("setup's writer puts the local images and the CA bundle in the XDG file, private to the user", () => {
    const printed = execFileSync(process.execPath, [WRITE_CONFIG], { env, encoding: 'utf8' }).trim();
    expect(printed).toBe(configFile);
    expect(statSync(configFile).mode & 0o777).toBe(0o600);
    const written = JSON.parse(readFileSync(configFile, 'utf8'));
    expect(written.baseImages).toMatchObject({ plain: 'ca-sbx-base:debian', node: 'ca-sbx-base:node' });
    // A second run keeps what is there (the user's edits win).
    written.build = { timeoutSeconds: 600 };
    writeFileSync(configFile, JSON.stringify(written));
    execFileSync(process.execPath, [WRITE_CONFIG], { env, encoding: 'utf8' });
    expect(JSON.parse(readFileSync(configFile, 'utf8')).build).toEqual({ timeoutSeconds: 600 });
  });

  it('`config` names each setting’s source: file, env, default', async () => {
    const result = await runBinWithExactEnv(['config', '--json'], { ...env, CA_SANDBOX_BUILD_MEMORY: '1g' });
    expect(result.code).toBe(0);
    const shown = JSON.parse(result.stdout) as ConfigJson;
    expect(shown.file).toEqual({ path: configFile, source: 'default', exists: true });
    const byKey = new Map(shown.settings.map((s) => [s.key, s]));
    expect(byKey.get('baseImages.plain')).toMatchObject({
      value: 'ca-sbx-base:debian',
      source: 'file',
      from: configFile,
    });
    expect(byKey.get('build.timeoutSeconds')).toMatchObject({ value: 600, source: 'file' });
    expect(byKey.get('build.memory')).toMatchObject({
      value: '1g',
      source: 'env',
      from: 'CA_SANDBOX_BUILD_MEMORY',
    });
    expect(byKey.get('helperImage')).toMatchObject({ value: 'ca-sbx-base:git', source: 'default' });
    expect(byKey.get('mcp.outputRoot')).toMatchObject({
      value: join(home, 'xdg-data', 'ca-sandbox', 'output'),
    });

    const table = await runBinWithExactEnv(['config'], env);
    expect(table.stdout).toContain(`config file: ${configFile}`);
    expect(table.stdout).toMatch(/^baseImages\.plain\s+ca-sbx-base:debian\s+file$/m);
    expect((await runBinWithExactEnv(['config', 'path'], env)).stdout).toBe(`${configFile}\n`);
    // One setting: its value alone, or its row under --json; an unknown name says which exist.
    expect((await runBinWithExactEnv(['config', 'baseImages.plain'], env)).stdout).toBe(
      'ca-sbx-base:debian\n',
    );
    const one = await runBinWithExactEnv(['config', 'build.memory', '--json'], {
      ...env,
      CA_SANDBOX_BUILD_MEMORY: '1g',
    });
    expect(JSON.parse(one.stdout)).toMatchObject({ key: 'build.memory', value: '1g', source: 'env' });
    const unknown = await runBinWithExactEnv(['config', 'baseImages.nod'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error: unknown setting 'baseImages\.nod' \(one of: baseImages\.node, /);
  });

  it('create works in the fresh shell, with the base image from the file', async () => {
    const created = await runBinWithExactEnv(['create', repo, '--name', id, '--json'], env);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ id, status: 'running', provider: 'plain' });
    const destroyed = await runBinWithExactEnv(['destroy', id], env);
    expect(destroyed.code).toBe(0);
    expect(remainingObjects(id)).toEqual([]);
  });

  it('a bad file is one usage error naming the file and the key (exit 2), for the commands that read it', async () => {
    writeFileSync(configFile, JSON.stringify({ build: { cpus: 'two' } }));
    for (const args of [['config'], ['create', repo, '--name', id]]) {
      const result = await runBinWithExactEnv(args, env);
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(new RegExp(`^error: config file ${configFile}: build\\.cpus: `));
    }
  });
});
