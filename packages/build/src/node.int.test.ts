import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { engine, inspectImage, SANDBOX_LABEL, setDockerTracer } from '@ca-sandbox/docker';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FixtureRepo, readFixture, removeImages } from '../test/fixture-volume.js';
import { installCodeRepo } from '../test/install-code.js';
import { linkDependencies, type PrepareEvent, type PrepareImageOptions, prepareImage } from './index.js';

const fixtureDir = fileURLToPath(new URL('../test/fixtures/node-esm/', import.meta.url));
const baseImages = {
  node: 'ca-sbx-base:node',
  python: 'ca-sbx-base:python',
  go: 'ca-sbx-base:go',
  plain: 'ca-sbx-base:debian',
};
// The host's TLS proxy CA (if any), named explicitly: the install step needs it to reach npm here.
const caCertificates = process.env.CA_SANDBOX_CA_CERTS ?? process.env.NODE_EXTRA_CA_CERTS;
const run = `t${randomUUID().slice(0, 6)}`;
const images = new Set<string>();
const repos: FixtureRepo[] = [];
let argvs: string[][] = [];

async function repo(tree: Parameters<FixtureRepo['start']>[0]): Promise<FixtureRepo> {
  const fixture = new FixtureRepo();
  repos.push(fixture);
  return fixture.start(tree);
}

async function prepare(fixture: FixtureRepo, options: Partial<PrepareImageOptions>) {
  const events: PrepareEvent[] = [];
  const result = await prepareImage({
    containerId: fixture.container,
    repoName: `build-int/${run}`,
    source: `/test/build-int/${run}`,
    policy: 'clone-then-cut',
    builder: 'builtin',
    baseImages,
    ...(caCertificates ? { caCertificates } : {}),
    onEvent: (event) => events.push(event),
    ...options,
  });
  if (result.image.startsWith('ca-sbx:')) images.add(result.image);
  // The pre-install build has a context (`--file`) and no tag (a prep image's build, made when the
  // base has none yet, has its tag); a build reading stdin would be a label build.
  const builds = argvs.filter(
    (argv) => argv[0] === 'build' && argv.includes('--file') && !argv.includes('--tag'),
  );
  return {
    result,
    events,
    builds,
    labelBuilds: argvs.filter((argv) => argv[0] === 'build' && argv.at(-1) === '-'),
  };
}

beforeEach(() => {
  argvs = [];
  setDockerTracer((argv) => argvs.push([...argv]));
});
afterEach(async () => {
  setDockerTracer(undefined);
  await Promise.all(repos.splice(0).map((fixture) => fixture.cleanup()));
});
afterAll(async () => removeImages(images));

describe('prepareImage: node (real engine)', () => {
  it('installs a real npm dependency under clone-then-cut: ESM import and require work from /work/repo', async () => {
    const canaryName = `CA_SBX_CANARY_${randomUUID().slice(0, 8).toUpperCase()}`;
    const canaryValue = `canary-${randomUUID()}`;
    process.env[canaryName] = canaryValue;
    try {
      const fixture = await repo(readFixture(fixtureDir));
      const { result, builds, labelBuilds, events } = await prepare(fixture, {});
      expect(result).toMatchObject({
        cacheHit: false,
        provider: 'node',
        builder: 'builtin',
        depsInstalled: true,
        linkNodeModules: true,
      });
      expect(result.image).toMatch(/^ca-sbx:build-int-t[0-9a-f]{6}-[0-9a-f]{8}-[0-9a-f]{16}-[0-9a-f]{24}$/);
      // No build of ours for the repo (the prep image is the base's, made once), no label build:
      // the install is a container of the prep image, the manifests put into it before its start,
      // its layer committed with the labels.
      expect(builds).toHaveLength(0);
      expect(labelBuilds).toHaveLength(0);
      const api = argvs.filter((argv) => argv[0] === '(engine API)').map((argv) => argv.slice(1).join(' '));
      const created = api.findIndex((call) =>
        /^POST \/containers\/create\?name=ca-sbx_install-[0-9a-f]{24}$/.test(call),
      );
      const put = api.findIndex((call) =>
        /^PUT \/containers\/[0-9a-f]{64}\/archive\?path=%2Fdeps%2Fsrc&/.test(call),
      );
      const started = api.findIndex(
        (call, at) => at > created && /^POST \/containers\/[0-9a-f]{64}\/start$/.test(call),
      );
      expect(created).toBeGreaterThanOrEqual(0);
      expect(put).toBeGreaterThan(created);
      expect(started).toBeGreaterThan(put);
      expect(api).toEqual(expect.arrayContaining([expect.stringMatching(/^POST \/commit\?container=/)]));
      // What the Dockerfile's USER and ENV gave, the image has: the box user, the recipe's paths.
      const committed = await engine.image.inspect(result.image);
      expect(committed?.Config.User).toBe('1000:1000');
      expect(committed?.Config.Env).toEqual(expect.arrayContaining(['NODE_PATH=/deps/node_modules']));
      expect(committed?.Config.Env.find((entry) => entry.startsWith('PATH='))).toMatch(
        /^PATH=\/deps\/pm\/bin:\/deps\/node_modules\/\.bin:.*:\/usr\/bin/,
      );
      // No host value reaches the image: its variables are the base's and the recipe's only.
      expect(committed?.Config.Env.some((entry) => /^(https?|no|ftp|all)_proxy=/i.test(entry))).toBe(false);
      expect(events.map((e) => e.type)).toEqual(['manifests', 'dephash', 'build', 'built']);

      // The box links node_modules (the helper has no /deps): a real directory of the volume.
      // Started ahead, as a create does: its time limit counts from the word, not from its start
      // (a limit shorter than the wait would have killed it while the checkout was written).
      const boxName = await fixture.startBox(result.image);
      const written = new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 4000));
      expect(await linkDependencies(boxName, result, { after: written, timeoutMs: 3000 })).toMatchObject({
        linked: true,
        dirs: ['node_modules'],
        kept: [],
      });
      expect(
        (
          await fixture.exec(
            'test ! -L /work/repo/node_modules && readlink /work/repo/node_modules/is-number',
          )
        ).trim(),
      ).toBe('/deps/src/node_modules/is-number');
      const box = await fixture.runBox(
        result.image,
        'node index.mjs && node check.cjs && node -e "require(\'is-number\')" && id -u',
      );
      expect(box.stderr).toBe('');
      expect(box.stdout.split('\n')).toEqual(['esm:true:false', 'cjs:true', '1000', '']);

      // The image: a cache label (not ca.sandbox=1), non-root, deps out of tree, no host env.
      const inspect = await inspectImage(result.image);
      expect(inspect?.Config.Labels).toMatchObject({
        'ca.sandbox.cache': '1',
        'ca.sandbox.cache.dephash': result.dephash,
        'ca.sandbox.cache.repo': expect.stringMatching(/^build-int-t/),
      });
      expect(inspect?.Config.Labels[SANDBOX_LABEL]).toBeUndefined();
      const raw = (await docker(['image', 'inspect', '--', result.image])).stdout;
      const config = JSON.parse(raw)[0].Config;
      expect(config.User).toBe('1000:1000');
      expect(config.WorkingDir).toBe('/work/repo');
      expect(config.Env).toEqual(expect.arrayContaining(['HOME=/tmp', 'NODE_PATH=/deps/node_modules']));
      expect(raw).not.toContain(canaryValue);
      expect(raw).not.toContain(canaryName);
      const history = (await docker(['history', '--no-trunc', '--format', '{{.CreatedBy}}', result.image]))
        .stdout;
      // The install's layer names no script (its "created by" is the container's PID 1): a
      // registry setting or the gateway's address never reaches the history.
      expect(history).not.toContain('npm ci');
      expect(history.split('\n')[0]).toBe('/bin/cat');
      expect(history).not.toContain(canaryValue);
      expect(history).not.toContain(canaryName);
      expect(history).not.toMatch(/\bARG\b/);
      // The volume is at /work/repo only; the deps stay in the image.
      const layout = await fixture.runBox(
        result.image,
        'ls /deps/node_modules && test ! -e /work/repo/package-lock.json.orig && echo ok',
      );
      expect(layout.stdout).toContain('is-number');
    } finally {
      delete process.env[canaryName];
    }
  });

  it('second prepare is a cache hit (no docker build); a source edit keeps the tag, a lockfile edit changes it', async () => {
    const fixture = await repo(readFixture(fixtureDir));
    const first = await prepare(fixture, {});
    argvs = [];
    const second = await prepare(fixture, {});
    expect(second.result).toMatchObject({
      cacheHit: true,
      image: first.result.image,
      dephash: first.result.dephash,
    });
    expect(second.builds).toEqual([]);
    expect(second.events.map((e) => e.type)).toEqual(['manifests', 'dephash', 'cache-hit']);

    await fixture.write({ 'index.mjs': 'console.log("edited")\n', 'src/new.js': 'export const x = 1;\n' });
    argvs = [];
    const afterSource = await prepare(fixture, {});
    expect(afterSource.result).toMatchObject({ cacheHit: true, image: first.result.image });
    expect(afterSource.builds).toEqual([]);

    const lock = JSON.parse((await fixture.exec('cat /work/repo/package-lock.json')) || '{}');
    lock.packages[''].description = 'edited lockfile';
    await fixture.write({ 'package-lock.json': JSON.stringify(lock, null, 2) });
    argvs = [];
    // offline: the new dephash has no cached image, and offline never installs.
    const afterLock = await prepare(fixture, { policy: 'offline' });
    expect(afterLock.result.dephash).not.toBe(first.result.dephash);
    expect(afterLock.result).toMatchObject({
      cacheHit: false,
      depsInstalled: false,
      image: 'ca-sbx-base:node',
      linkNodeModules: false,
    });
    expect(afterLock.builds).toEqual([]);
  });

  it('offline runs no install: install code never runs (and does under clone-then-cut, the root postinstall not)', async () => {
    const tree = {
      ...installCodeRepo('echo ran > /deps/src/canary-postinstall'),
      'package.json': JSON.stringify({
        name: 'canary',
        version: '1.0.0',
        packageManager: 'pnpm@9.15.9',
        scripts: {
          postinstall: "node -e \"require('fs').writeFileSync('/deps/src/canary-root-script', 'ran')\"",
        },
      }),
    };
    const fixture = await repo(tree);
    const offline = await prepare(fixture, { policy: 'offline', repoName: `canary/${run}` });
    expect(offline.result).toMatchObject({
      cacheHit: false,
      depsInstalled: false,
      image: 'ca-sbx-base:node',
    });
    expect(offline.result.notes.join()).toMatch(/offline: no dependency install/);
    expect(offline.builds).toEqual([]);
    expect(offline.events.map((e) => e.type)).toContain('no-install');
    const none = await fixture.runBox(
      offline.result.image,
      'test -e /deps/src/canary-postinstall && echo RAN || echo none',
    );
    expect(none.stdout.trim()).toBe('none');

    const online = await prepare(fixture, { policy: 'clone-then-cut', repoName: `canary/${run}` });
    expect(online.events.map((e) => e.type)).toContain('built');
    const ran = await fixture.runBox(
      online.result.image,
      'cat /deps/src/canary-postinstall; test -e /deps/src/canary-root-script && echo ROOT-SCRIPT-RAN',
    );
    expect(ran.stdout).toBe('ran\n');
    // The repo's own lifecycle scripts are skipped (the install has only the manifests) and reported.
    expect(online.result.notes.join('\n')).toMatch(
      /own install scripts were skipped .*package\.json \(postinstall\)/,
    );

    // Now that a cached image exists for the dephash, offline reuses it without a build.
    argvs = [];
    const reuse = await prepare(fixture, { policy: 'offline', repoName: `canary/${run}` });
    expect(reuse.result).toMatchObject({ cacheHit: true, image: online.result.image, depsInstalled: true });
    expect(reuse.result.imageSource).toBe(`/test/build-int/${run}`);
    expect(reuse.builds).toEqual([]);
    // Another source with the same name and manifests never gets that image (cache poisoning).
    const other = await prepare(fixture, {
      policy: 'offline',
      repoName: `canary/${run}`,
      source: `/test/other/${run}`,
    });
    expect(other.result).toMatchObject({ cacheHit: false, depsInstalled: false, imageSource: '' });
  });

  it('never replaces a node_modules the repo has', async () => {
    const fixture = await repo({
      ...readFixture(fixtureDir),
      'node_modules/own/index.js': 'module.exports = 1;\n',
    });
    const { result } = await prepare(fixture, {});
    const boxName = await fixture.startBox(result.image);
    expect(await linkDependencies(boxName, result)).toMatchObject({
      linked: false,
      reason: 'the repo has its own node_modules',
      kept: ['node_modules'],
    });
    expect((await fixture.exec('test -d /work/repo/node_modules/own && echo kept')).trim()).toBe('kept');
    expect(await linkDependencies(fixture.container, { linkNodeModules: false })).toEqual({
      linked: false,
      reason: 'not needed',
    });
  });
});
