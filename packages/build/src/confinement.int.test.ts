// The install step's guard on the real engine: a step that sees itself under other limits than the
// ones it must have stops before the install's first line (@ca-sandbox/docker confinementGuard). The
// engine here always applies what it is given, so the mismatch is made on our side: the install's
// script expects one file size cap, its container is started with another (as an engine ignoring
// one would).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILD_LABEL, CONFINEMENT_MARKER, engine, installConfinementRows } from '@ca-sandbox/docker';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerSync, engineReady, TEST_BASE } from '../test/real-engine.js';
import { buildArgv } from './build-argv.js';
import { removeBuildImages } from './build-cleanup.js';
import { CONTEXT_MANIFESTS, installCommand, LABEL_BUILD_ID, renderDockerfile } from './dockerfile.js';
import { ImageBuildError } from './errors.js';
import { InstallLog } from './install-log.js';
import { ensurePrepImage } from './prep-image.js';
import type { InstallRecipe } from './recipe.js';
import { removeInstallContainer, runInstall } from './run-install.js';

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
  const builds: string[] = [];
  afterAll(async () => {
    // The steps that passed in a stopped build are images of its build id: none is left.
    for (const id of builds) await removeBuildImages(id);
    rmSync(context, { recursive: true, force: true });
  });

  const nextBuild = () => {
    const id = randomBytes(12).toString('hex');
    builds.push(id);
    return id;
  };

  /** The pre-install image (no RUN), then the install as a container of it, as build-image.ts runs them. */
  async function install(expected: typeof limits) {
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
    const buildId = nextBuild();
    const dockerfile = join(context, 'Dockerfile');
    writeFileSync(dockerfile, renderDockerfile(prep, recipe, { buildId }));
    const iidFile = join(context, 'image.id');
    const built = await engine.image.build(
      buildArgv({ network: 'none', iidFile, dockerfile, context, limits }),
      {
        timeoutMs: 300_000,
      },
    );
    expect(built.exitCode).toBe(0);
    const lines: string[] = [];
    const run = runInstall({
      image: 'ca-sbx:confinement-test',
      preInstallImage: readFileSync(iidFile, 'utf8').trim(),
      // The step expects `expected`; the container gets `limits` (as an engine ignoring one would).
      command: installCommand(recipe, { limits: expected, buildId }),
      network: 'none',
      limits,
      labels: { [BUILD_LABEL]: '1', [LABEL_BUILD_ID]: buildId },
      buildId,
      log: (line) => lines.push(line),
      installLog: await InstallLog.open(`confinement-${buildId}`, context),
      timeoutMs: 300_000,
      timeLimitMs: 300_000,
      maxDepsSize: 1024 ** 3,
    });
    return { run, lines };
  }

  it('a step under its limits goes on to the install; the engine confines its container as the box', async () => {
    const { run, lines } = await install(limits);
    const { container } = await run;
    try {
      expect(lines).toContain(INSTALL_RAN);
      const confined = lines.find((line) => line.startsWith(CONFINEMENT_MARKER)) ?? '';
      expect(confined).toContain(';NoNewPrivs: 1;');
      // Checked from the inside (installConfinementRows), and the container as the engine made it.
      expect(installConfinementRows(confined, limits).filter((row) => !row.pass)).toEqual([]);
      const doc = await engine.container.inspect(container);
      expect(doc.HostConfig.CapDrop).toEqual(['ALL']);
      expect(doc.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
      expect(doc.HostConfig.Privileged).toBe(false);
      expect(doc.HostConfig.Binds).toEqual([]);
      expect(doc.Mounts).toEqual([]);
      expect(doc.Config.User).toBe('1000:1000');
      expect(doc.HostConfig.Memory).toBe(512 * 1024 ** 2);
      expect(doc.HostConfig.NetworkMode).toBe('none');
    } finally {
      await removeInstallContainer(container);
    }
  }, 300_000);

  it('a step under another file size cap stops before the install (exit 97), naming the field; nothing is left', async () => {
    const { run, lines } = await install({ ...limits, fileSize: 2 * 1024 ** 3 });
    const error = await run.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ImageBuildError);
    expect((error as ImageBuildError).exitCode).toBe(97);
    expect(lines.join('\n')).toContain(
      'the install step is not confined (Max file size): stopped before the install',
    );
    expect(lines).not.toContain(INSTALL_RAN);
    expect(
      await engine.container.list({ all: true, labels: [`${LABEL_BUILD_ID}=${builds.at(-1)}`] }),
    ).toEqual([]);
  }, 300_000);
});
