// The install step's guard on the real engine: a step that sees itself under other limits than the
// ones it must have stops before the install's first line (@ca-sandbox/docker confinementGuard). The
// engine here always applies what it is given, so the mismatch is made on our side: the Dockerfile
// expects one file size cap, the build is started with another (as an engine ignoring one would).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engine } from '@ca-sandbox/docker';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerSync, engineReady, TEST_BASE } from '../test/real-engine.js';
import { buildArgv } from './build-argv.js';
import { removeBuildImages } from './build-cleanup.js';
import { CONTEXT_MANIFESTS, renderDockerfile } from './dockerfile.js';
import { ensurePrepImage } from './prep-image.js';
import type { InstallRecipe } from './recipe.js';

const limits = { memory: '512m', cpus: 1, processes: 256, fileSize: 1024 ** 3 };
const INSTALL_RAN = 'ca-sbx-test-install-ran';
const recipe: InstallRecipe = {
  provider: 'plain',
  install: [`echo ${INSTALL_RAN}`],
  env: [{ name: 'HOME', value: '/tmp' }],
  installEnv: [],
  notes: [],
  linkNodeModules: false,
};

describe.skipIf(!engineReady)('the install step guards its own confinement (real engine)', () => {
  const context = mkdtempSync(join(tmpdir(), 'ca-confinement-'));
  const tags: string[] = [];
  const builds: string[] = [];
  afterAll(async () => {
    // The steps that passed in a stopped build are images of its build id: none is left.
    for (const id of builds) await removeBuildImages(id);
    for (const tag of tags) {
      try {
        dockerSync('image', 'rm', '--force', tag);
      } catch {}
    }
    rmSync(context, { recursive: true, force: true });
  });

  const nextBuild = () => {
    const id = randomBytes(12).toString('hex');
    builds.push(id);
    return id;
  };

  async function build(expected: typeof limits) {
    const baseImageId = dockerSync('image', 'inspect', '--format', '{{.Id}}', TEST_BASE);
    const prep = await ensurePrepImage({
      baseImage: TEST_BASE,
      baseImageId,
      limits,
      timeoutMs: 300_000,
      log: () => {},
    });
    mkdirSync(join(context, CONTEXT_MANIFESTS), { recursive: true });
    writeFileSync(join(context, CONTEXT_MANIFESTS, 'README'), 'x\n');
    const dockerfile = join(context, 'Dockerfile');
    writeFileSync(dockerfile, renderDockerfile(prep, recipe, { limits: expected, buildId: nextBuild() }));
    const tag = `ca-sbx:confinement-test-${randomBytes(4).toString('hex')}`;
    tags.push(tag);
    const argv = [...buildArgv({ network: 'none', dockerfile, context, limits }), '--tag', tag];
    // --tag after the context is still an option to docker build; the argv is ours, not the repo's.
    return engine.image.build(argv, { allowFailure: true, timeoutMs: 300_000 });
  }

  it('a step under its limits goes on to the install', async () => {
    const result = await build(limits);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toContain(INSTALL_RAN);
    expect(result.stdout).toContain(';NoNewPrivs: 1;');
  }, 300_000);

  it('a step under another file size cap stops before the install (exit 97), naming the field', async () => {
    const result = await build({ ...limits, fileSize: 2 * 1024 ** 3 });
    expect(result.exitCode).not.toBe(0);
    const output = `${result.stdout}\n${result.stderr}`;
    expect(output).toContain('the install step is not confined (Max file size): stopped before the install');
    expect(output).toMatch(/returned a non-zero code: 97/);
    expect(output).not.toContain(`\n${INSTALL_RAN}`);
  }, 300_000);
});
