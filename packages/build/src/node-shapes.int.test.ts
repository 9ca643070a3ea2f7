import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FixtureRepo, type FixtureTree, readFixture, removeImages } from '../test/fixture-volume.js';
import { linkDependencies, prepareImage } from './index.js';

// Each fixture reproduces a repo shape and runs its own test command in a box of its deps image.
// The base is the node image the tests are pointed at (Node 22 with npm 10 where seeded).
const fixtures = fileURLToPath(new URL('../test/fixtures/', import.meta.url));
const baseImages = { node: process.env.CA_SANDBOX_BASE_IMAGE_NODE ?? 'ca-sbx-base:node' };
const caCertificates = process.env.CA_SANDBOX_CA_CERTS ?? process.env.NODE_EXTRA_CA_CERTS;
const run = `t${randomUUID().slice(0, 6)}`;
const images = new Set<string>();
const repos: FixtureRepo[] = [];
const YARN_VERSION = '4.5.3';
let yarnRelease = '';

beforeAll(async () => {
  // yarn berry repos commit their release: the fixture gets the real one from the npm registry.
  const dir = await mkdtemp(join(tmpdir(), 'ca-sbx-yarn-'));
  try {
    const pack = await promisify(execFile)('npm', ['pack', '--silent', `@yarnpkg/cli-dist@${YARN_VERSION}`], {
      cwd: dir,
    });
    await promisify(execFile)('tar', ['-xzf', pack.stdout.trim(), 'package/bin/yarn.js'], { cwd: dir });
    yarnRelease = await readFile(join(dir, 'package/bin/yarn.js'), 'utf8');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
afterEach(async () => {
  await Promise.all(repos.splice(0).map((fixture) => fixture.cleanup()));
});
afterAll(async () => removeImages(images));

/** Builds the fixture's deps image, starts a box, links node_modules; returns the box and notes. */
async function boxOf(tree: FixtureTree) {
  const fixture = await new FixtureRepo().start(tree);
  repos.push(fixture);
  const lines: string[] = [];
  const result = await prepareImage({
    containerId: fixture.container,
    repoName: `shapes/${run}`,
    source: `/test/shapes/${run}`,
    policy: 'clone-then-cut',
    builder: 'builtin',
    baseImages,
    ...(caCertificates ? { caCertificates } : {}),
    onLog: (line) => lines.push(line),
  }).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\n${lines.slice(-40).join('\n')}`);
  });
  images.add(result.image);
  const box = await fixture.startBox(result.image);
  const link = await linkDependencies(box, result);
  return {
    fixture,
    box,
    result,
    link,
    exec: (script: string, timeoutMs?: number) => fixture.execIn(box, script, timeoutMs),
  };
}

function expectOk(out: { exitCode: number; stdout: string; stderr: string }): void {
  expect(out, `${out.stdout}\n${out.stderr}`).toMatchObject({ exitCode: 0 });
}

describe('node repo shapes run their own tests in the box (real engine)', () => {
  it('pnpm workspace with a patch and a hostile .npmrc: `pnpm test` runs in every package', async () => {
    const { exec, result, link } = await boxOf(readFixture(join(fixtures, 'pnpm-workspace-patch')));
    const notes = result.notes.join('\n');
    expect(notes).toMatch(/package manager pnpm@9\.15\.9 \(from packageManager\)/);
    // registry, credentials and TLS settings of the repo are ignored; harmless ones kept.
    expect(notes).toMatch(/\.npmrc: ignored registry, \/\/127\.0\.0\.1:9\/:_authToken, strict-ssl/);
    expect(link).toMatchObject({
      linked: true,
      dirs: ['node_modules', 'packages/app/node_modules', 'packages/lib/node_modules'],
    });
    const test = await exec('pnpm --version && pnpm test');
    expectOk(test);
    expect(test.stdout).toMatch(/^9\.15\.9$/m);
    expect(test.stdout).toContain('lib ok');
    expect(test.stdout).toContain('app ok');
    // node_modules are real directories of the volume; the deps stay read-only in the image.
    const layout = await exec(
      'test -d node_modules -a ! -L node_modules && test -f packages/app/node_modules/.cache-probe && readlink packages/app/node_modules/semver && (touch /deps/src/node_modules/x 2>/dev/null && echo writable || echo read-only)',
    );
    expectOk(layout);
    expect(layout.stdout.trim().split('\n')).toEqual([
      '/deps/src/packages/app/node_modules/semver',
      'read-only',
    ]);
  });

  it('yarn berry with its release in .yarn/releases: `yarn test` runs offline with that release', async () => {
    const tree = readFixture(join(fixtures, 'yarn-berry'));
    tree[`.yarn/releases/yarn-${YARN_VERSION}.cjs`] = yarnRelease;
    const { exec, result, link } = await boxOf(tree);
    expect(result.notes.join('\n')).toMatch(
      /@yarnpkg\/cli-dist@4 \(from packageManager; it launches the repo's release \.yarn\/releases\/yarn-4\.5\.3\.cjs\)/,
    );
    // The lockfile matched its manifests: the install left it as the repo has it (the image's
    // label, from the build's hashes, says the same as the link's comparison in the box).
    expect(link.changedLocks).toEqual([]);
    expect(result.changedLocks).toEqual([]);
    const test = await exec('yarn --version && yarn test');
    expectOk(test);
    expect(test.stdout).toMatch(/^4\.5\.3$/m);
    expect(test.stdout).toContain('yarn yarn/4.5.3 ok');
  });

  it('yarn berry pinned to a release the registry never had (an rc in .yarn/releases): the repo’s release runs', async () => {
    // typanion's shape: packageManager yarn@4.0.0-rc.2 and that release committed; npm has no
    // @yarnpkg/cli-dist@4.0.0-rc.2. (The file here is 4.5.3's code under the rc's name.)
    const tree = readFixture(join(fixtures, 'yarn-berry'));
    const release = '.yarn/releases/yarn-4.0.0-rc.2.cjs';
    tree[release] = yarnRelease;
    tree['.yarnrc.yml'] = `yarnPath: ${release}\nenableTelemetry: false\n`;
    tree['package.json'] = String(tree['package.json']).replace('yarn@4.5.3', 'yarn@4.0.0-rc.2');
    const { exec, result } = await boxOf(tree);
    expect(result.notes.join('\n')).toContain(
      `@yarnpkg/cli-dist@4 (from packageManager; it launches the repo's release ${release})`,
    );
    const test = await exec('yarn --version && yarn test');
    expectOk(test);
    expect(test.stdout).toMatch(/^4\.5\.3$/m);
  });

  it('yarn berry whose yarn.lock does not match package.json: the install rewrites it, and the link says so', async () => {
    // The install is not immutable (a stale lockfile would sink it otherwise): the box's copy is
    // the repo's, no longer what was installed; yarn there reports the project as not installed.
    const tree = readFixture(join(fixtures, 'yarn-berry'));
    tree[`.yarn/releases/yarn-${YARN_VERSION}.cjs`] = yarnRelease;
    tree['package.json'] = String(tree['package.json']).replace(
      '"is-number": "7.0.0"',
      '"is-number": "6.0.0"',
    );
    const { exec, link, result } = await boxOf(tree);
    expect(link.changedLocks).toEqual(['yarn.lock']);
    expect(result.changedLocks).toEqual(['yarn.lock']);
    const installed = await exec(
      'grep -q "is-number@npm:6.0.0" /deps/src/yarn.lock && echo installed-6; grep -q "is-number@npm:6.0.0" yarn.lock || echo repo-7',
    );
    expect(installed.stdout.trim().split('\n')).toEqual(['installed-6', 'repo-7']);
    // yarn rewrites its install state then: a copy in the volume (a link into /deps was EROFS).
    const test = await exec('yarn test && test -f .yarn/install-state.gz -a ! -L .yarn/install-state.gz');
    expectOk(test);
    expect(test.stdout).toContain('yarn yarn/4.5.3 ok');
  });

  it('npm workspaces: per-package node_modules and .bin resolve, workspace links reach the source', async () => {
    const { exec, link } = await boxOf(readFixture(join(fixtures, 'npm-workspaces')));
    expect(link.dirs).toEqual(['node_modules', 'packages/a/node_modules']);
    const test = await exec('npm test');
    expectOk(test);
    expect(test.stdout).toContain('a ok');
    expect(test.stdout).toContain('fx-a bin');
    expect(test.stdout).toContain('b ok');
  });

  it('pnpm workspace whose member depends on the root package (workspace:*): the link reaches the source', async () => {
    // jest-styled-components (corpus trial): test/vitest's link to the root ended at /deps/src,
    // which has the manifests only, so the root's files were not found.
    const { exec } = await boxOf(readFixture(join(fixtures, 'pnpm-workspace-root-link')));
    const test = await exec('pnpm test');
    expectOk(test);
    expect(test.stdout).toContain('root ok /work/repo/index.js');
  });

  it('vitest: `npm test` writes node_modules/.vite and .vite-temp in the volume', async () => {
    const { exec } = await boxOf(readFixture(join(fixtures, 'vitest')));
    const test = await exec('npm test 2>&1 && find node_modules/.vite -name results.json');
    expectOk(test);
    expect(test.stdout).toMatch(/1 passed/);
    expect(test.stdout).toMatch(/^node_modules\/\.vite\/vitest\/.*results\.json$/m);
  });

  it('vitest --typecheck (pnpm): its tsbuildinfo goes to the tmpfs through a baked link; one vitest for the runner and a dependency that imports it (snapshots)', async () => {
    const { exec, link } = await boxOf(readFixture(join(fixtures, 'vitest-typecheck')));
    // No copy: a second vitest would serve jest-dom's import, and its snapshot matchers fail.
    expect(link.copied).toEqual([]);
    const test = await exec(
      'NO_COLOR=1 pnpm test 2>&1 && ls /tmp/vitest-*.tsbuildinfo && readlink -f node_modules/vitest',
      // tsc over vitest's types takes minutes on a loaded machine.
      600_000,
    );
    expectOk(test);
    expect(test.stdout, test.stdout).toMatch(/Type Errors\s+no errors/);
    expect(test.stdout, test.stdout).toMatch(/Tests\s+3 passed/);
    expect(test.stdout, test.stdout).toMatch(/^\/tmp\/vitest-[0-9a-f]{16}\.tsbuildinfo$/m);
    expect(test.stdout).toMatch(
      /^\/deps\/src\/node_modules\/\.pnpm\/vitest@3\.2\.4[^/]*\/node_modules\/vitest$/m,
    );
    // jest-dom's `vitest` resolves to the same folder as the repo's.
    const jestDom = await exec(
      "cd node_modules/@testing-library/jest-dom && node -p \"require('fs').realpathSync(require('path').dirname(require.resolve('vitest/package.json')))\"",
    );
    expectOk(jestDom);
    expect(jestDom.stdout).toMatch(
      /^\/deps\/src\/node_modules\/\.pnpm\/vitest@3\.2\.4[^/]*\/node_modules\/vitest$/m,
    );
  }, 900_000);

  it('vue-demi: `vue-demi-switch 3` in a test script rewrites its copy in the volume (the baked one is read-only)', async () => {
    const { exec, link } = await boxOf({
      'package.json': JSON.stringify({
        name: 'fixture-vue-demi',
        private: true,
        scripts: { test: 'vue-demi-switch 3 && node -e "console.log(require(\'vue-demi\').isVue3)"' },
        dependencies: { 'vue-demi': '0.14.10', vue: '^3.4.0' },
      }),
    });
    expect(link.copied).toEqual(['node_modules/vue-demi']);
    const test = await exec('npm test --silent 2>&1');
    expectOk(test);
    expect(test.stdout.trim().split('\n').at(-1)).toBe('true');
  });

  it('a native addon of the repo rebuilds in the box offline (node headers, node-addon-api targets); corepack enable works', async () => {
    const { exec, result, link } = await boxOf(readFixture(join(fixtures, 'addon-in-box')));
    expect(result.notes.join('\n')).toMatch(
      /the repo's own install scripts were skipped .*package\.json \(install\)/,
    );
    expect(link.copied).toEqual(['node_modules/node-addon-api']);
    // The box has no network: node-gyp must find node's headers in the image.
    const build = await exec(
      'npm run install 2>&1 && npm test --silent && ls build/node_modules/node-addon-api',
      600_000,
    );
    expectOk(build);
    expect(build.stdout).toContain('hello from an addon built in the box');
    expect(build.stdout).toMatch(/node_addon_api_except\.target\.mk/);
    // `corepack enable` puts its shims in the writable bin dir on PATH; node's own dir stays read-only.
    const corepack = await exec(
      'corepack enable && command -v pnpm && command -v yarn && corepack disable && ls /tmp/.local/bin | wc -l && touch /usr/local/bin/probe',
    );
    expect(corepack.stdout).toBe('/tmp/.local/bin/pnpm\n/tmp/.local/bin/yarn\n0\n');
    expect(corepack).toMatchObject({ exitCode: 1, stderr: expect.stringMatching(/Read-only file system/) });
  }, 900_000);

  it("a root install script that needs the source is skipped and reported; dependencies' scripts run", async () => {
    const { exec, result } = await boxOf(readFixture(join(fixtures, 'root-install-script')));
    expect(result.notes.join('\n')).toMatch(
      /the repo's own install scripts were skipped .*package\.json \(install, postinstall\)/,
    );
    const test = await exec('npm test && ls /deps/src');
    expectOk(test);
    expect(test.stdout).toMatch(/esbuild 0\.24\.2 ok/);
    expect(test.stdout).not.toContain('postinstall-ran');
  });
});
