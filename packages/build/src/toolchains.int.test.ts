import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { docker } from '@ca-sandbox/docker/cli';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FixtureRepo, readFixture, removeImages } from '../test/fixture-volume.js';
import { goModule, localPypiIndex, Mirror, pypiSubset } from '../test/mirrors.js';
import { loadExtraCa } from './ca-trust.js';
import { LABEL_BUILD_ID } from './dockerfile.js';
import {
  ImageBuildError,
  type PrepareImageOptions,
  parseToolchain,
  prepareImage,
  prepImageTag,
} from './index.js';

// Fixtures of our own, each running its own test command in the box, with its dependencies
// installed through a mirror served from a container of the test (python, go) or the npm registry.
const fixtures = fileURLToPath(new URL('../test/fixtures/', import.meta.url));
const baseImages = {
  node: 'ca-sbx-base:node',
  python: 'ca-sbx-base:python',
  go: 'ca-sbx-base:go',
  plain: 'ca-sbx-base:debian',
};
const caCertificates = process.env.CA_SANDBOX_CA_CERTS ?? process.env.NODE_EXTRA_CA_CERTS;
const run = `t${randomUUID().slice(0, 6)}`;
const images = new Set<string>();
const repos: FixtureRepo[] = [];
const mirrors: Mirror[] = [];

async function repo(tree: Parameters<FixtureRepo['start']>[0]): Promise<FixtureRepo> {
  const fixture = new FixtureRepo();
  repos.push(fixture);
  return fixture.start(tree);
}

async function prepare(fixture: FixtureRepo, name: string, options: Partial<PrepareImageOptions> = {}) {
  const result = await prepareImage({
    containerId: fixture.container,
    repoName: `toolchains/${name}-${run}`,
    source: `/test/toolchains/${name}-${run}`,
    policy: 'clone-then-cut',
    builder: 'builtin',
    baseImages,
    ...(caCertificates ? { caCertificates } : {}),
    ...options,
  });
  if (result.image.startsWith('ca-sbx:')) images.add(result.image);
  return result;
}

async function mirror(kind: string, tree: ConstructorParameters<typeof Mirror>[1]): Promise<Mirror> {
  const started = new Mirror(kind, tree);
  mirrors.push(started);
  return started.start();
}

afterEach(async () => {
  await Promise.all([...repos.splice(0).map((f) => f.cleanup()), ...mirrors.splice(0).map((m) => m.stop())]);
});
afterAll(async () => removeImages(images));

describe('base images (real engine)', () => {
  it('match the official defaults: node 22 with npm, corepack and headers; go with gcc; python with pip and venv', async () => {
    const label = async (image: string) =>
      parseToolchain(
        (
          await docker([
            'image',
            'inspect',
            '--format',
            '{{ index .Config.Labels "ca.sandbox.toolchain" }}',
            image,
          ])
        ).stdout.trim(),
      );
    const node = await label('ca-sbx-base:node');
    expect(node.node).toMatch(/^22\./);
    expect(node.npm).toMatch(/^10\./);
    expect(node.corepack).toMatch(/^0\./);
    expect(node.gcc).toBeDefined();
    const go = await label('ca-sbx-base:go');
    expect(Number(go.go?.split('.')[1])).toBeGreaterThanOrEqual(24);
    expect(go.gcc).toBeDefined();
    const python = await label('ca-sbx-base:python');
    expect(python.python3).toMatch(/^3\./);
    expect(python.pip).toBeDefined();
    const venv = await docker(
      [
        'run',
        '--rm',
        '--network',
        'none',
        '--user',
        '1000:1000',
        'ca-sbx-base:python',
        'python3',
        '-m',
        'venv',
        '/tmp/v',
      ],
      { allowFailure: true },
    );
    expect(venv.exitCode).toBe(0);
  });
});

describe('fixtures run their own tests in the box (real engine)', () => {
  it('node: a native addon builds with node-gyp during the install (headers from the image)', async () => {
    const fixture = await repo(readFixture(join(fixtures, 'node-addon')));
    const result = await prepare(fixture, 'addon');
    expect(result).toMatchObject({ provider: 'node', depsInstalled: true, cacheHit: false });
    expect(result.toolchain.node).toMatch(/^22\./);
    const box = await fixture.runBox(result.image, 'npm test --silent');
    expect(box.stderr).toBe('');
    expect(box.stdout.trim()).toBe('hello from a native addon');
    // The cache hit reads the toolchain back from the image's label.
    const again = await prepare(fixture, 'addon');
    expect(again).toMatchObject({ cacheHit: true, toolchain: result.toolchain });
  });

  /**
   * A python fixture installed through a mirror of the machine's local index holding pytest and
   * its dependencies (no poetry, no uv, no colorama: pytest's win32-only dependency), then its
   * tests run in the box offline. Undefined when this machine has no such index.
   */
  async function pythonThroughMirror(name: string, fixtureDir: string) {
    const index = await localPypiIndex();
    if (!index) {
      expect.soft(index, 'no PEP 503 file index in pip config on this machine').toBeDefined();
      return undefined;
    }
    const served = await mirror(
      'pypi',
      pypiSubset(index, ['pytest', 'iniconfig', 'packaging', 'pluggy', 'pygments', 'six']),
    );
    const fixture = await repo(readFixture(join(fixtures, fixtureDir)));
    const result = await prepare(fixture, name, { registries: { pip: `${served.url}/simple/` } });
    expect(result).toMatchObject({ provider: 'python', depsInstalled: true });
    expect(result.toolchain.python3).toMatch(/^3\./);
    const box = await fixture.runBox(result.image, 'python3 -m pytest -q -p no:cacheprovider 2>&1');
    expect(box.stdout).toMatch(/2 passed/);
    expect(box.exitCode).toBe(0);
    return result;
  }

  it('python: uv with a dev group, installed through a local index mirror; pytest runs offline', async () => {
    await pythonThroughMirror('uv', 'python-uv-dev');
  });

  it('python: poetry with a dev group, from poetry.lock alone (no poetry on the index); pytest runs offline', async () => {
    const result = await pythonThroughMirror('poetry', 'python-poetry-dev');
    if (result)
      expect(result.notes.join('\n')).toContain(
        "poetry: poetry.lock's pins for every dependency group and extra",
      );
  });

  it('go: module dependencies through a local GOPROXY at install; go test ./... (cgo) offline', async () => {
    const greet = goModule('example.com/greet', 'v1.0.0', {
      'go.mod': 'module example.com/greet\n\ngo 1.22\n',
      'greet.go': 'package greet\n\nfunc Hello(name string) string { return "hello, " + name }\n',
    });
    const served = await mirror('goproxy', greet.tree);
    const fixture = await repo({ ...readFixture(join(fixtures, 'go-mod')), 'go.sum': greet.goSum });
    const result = await prepare(fixture, 'go', { registries: { go: served.url } });
    expect(result).toMatchObject({ provider: 'go', depsInstalled: true });
    // The mirror is gone: go must find everything in the image (GOPROXY=off there anyway).
    await served.stop();
    // The box compiles the standard library into its empty GOCACHE (tmpfs): minutes on 2 busy cores.
    const box = await fixture.runBox(
      result.image,
      'go env GOPROXY && go test ./... 2>&1 && go run .',
      600_000,
    );
    expect(box.stdout).toMatch(/^off\n/);
    expect(box.stdout).toMatch(/^ok\s+example\.com\/app/m);
    expect(box.stdout).toMatch(/hello, box\n$/);
    expect(box.exitCode).toBe(0);
  }, 900_000);

  it('go: a module that vendors its dependencies installs nothing and go test ./... builds from vendor/', async () => {
    const fixture = await repo(readFixture(join(fixtures, 'go-vendor')));
    // GOPROXY off at install too: a download attempt would fail the build, as a proxy out of reach does.
    const result = await prepare(fixture, 'go-vendor', { registries: { go: 'off' } });
    expect(result).toMatchObject({ provider: 'go' });
    expect(result.notes).toContain('go: vendored modules are not downloaded (.): vendor/ is used');
    const box = await fixture.runBox(
      result.image,
      'go env GOFLAGS GOPROXY && go test ./... 2>&1 && go run .',
      600_000,
    );
    expect(box.stdout).toMatch(/^-mod=vendor\noff\n/);
    expect(box.stdout).toMatch(/^ok\s+example\.com\/vendored/m);
    expect(box.stdout).toMatch(/hello, vendor\n$/);
    expect(box.exitCode).toBe(0);
  }, 900_000);
});

describe('a failing install (real engine)', () => {
  it('says why (npm error lines, the kept log) and leaves no image, container or temp dir behind', async () => {
    // This process's own build contexts (`ca-sbx-build-<pid>-…`): other test files build at the same
    // time in other workers, and their contexts come and go meanwhile.
    const contexts = () =>
      readdirSync(tmpdir()).filter((name) => name.startsWith(`ca-sbx-build-${process.pid}-`));
    const before = new Set(contexts());
    const fixture = await repo({
      'package.json': JSON.stringify({
        name: 'fails',
        dependencies: { 'ca-sbx-no-such-package-4f1c': '1.0.0' },
      }),
    });
    const error = await prepare(fixture, 'fails').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageBuildError);
    const failure = error as ImageBuildError;
    expect(failure.message).toMatch(/^dependency install failed \(the install step of \S+ exited 1\): /);
    expect(failure.message).toMatch(/: npm error 404 Not Found - GET \S+ca-sbx-no-such-package-4f1c/);
    expect(failure.details.some((line) => /npm error (code E)?404/.test(line))).toBe(true);
    expect(failure.details.join('\n')).not.toMatch(/find \/tmp|returned a non-zero code/);
    expect(failure.logFile && existsSync(failure.logFile)).toBe(true);
    const log = readFileSync(failure.logFile ?? '', 'utf8');
    expect(log).toContain('ca-sbx-no-such-package-4f1c');
    expect(failure.hint).toBe(`full install log: ${failure.logFile}`);
    rmSync(failure.logFile ?? '', { force: true });
    // Nothing of the build is left: no image of its build id (the kept log's first line names it), no context.
    const buildId = log.match(new RegExp(`${LABEL_BUILD_ID.replace(/\./g, '\\.')}=([0-9a-f]+)`))?.[1];
    expect(buildId).toMatch(/^[0-9a-f]{24}$/);
    const left = await docker([
      'image',
      'ls',
      '--all',
      '--quiet',
      '--filter',
      `label=${LABEL_BUILD_ID}=${buildId}`,
    ]);
    expect(left.stdout.trim()).toBe('');
    expect(contexts().filter((name) => !before.has(name))).toEqual([]);
    const tag = await docker(['image', 'ls', '--quiet', `ca-sbx:toolchains-fails-${run}-*`]);
    expect(tag.stdout.trim()).toBe('');
    // The base's prep image (the root step, shared by every deps build on it) stays, tagged.
    const nodeBase = (
      await docker(['image', 'inspect', '--format', '{{.Id}}', baseImages.node])
    ).stdout.trim();
    const caHash = caCertificates ? loadExtraCa(caCertificates).hash : undefined;
    expect((await docker(['image', 'inspect', prepImageTag(nodeBase, caHash)])).exitCode).toBe(0);
  });
});
