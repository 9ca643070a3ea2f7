import { randomUUID } from 'node:crypto';
import { setDockerTracer } from '@ca-sandbox/docker';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FixtureRepo, type FixtureTree, removeImages } from '../test/fixture-volume.js';
import {
  BaseImageMissingError,
  ManifestLimitError,
  NixpacksMissingError,
  nixpacksVersion,
  type PrepareImageOptions,
  prepareImage,
  readManifests,
  type SkippedManifest,
} from './index.js';

const baseImages = {
  node: 'ca-sbx-base:node',
  python: 'ca-sbx-base:python',
  go: 'ca-sbx-base:go',
  plain: 'ca-sbx-base:debian',
};
const run = `t${randomUUID().slice(0, 6)}`;
const images = new Set<string>();
const repos: FixtureRepo[] = [];
let argvs: string[][] = [];
const hasNixpacks = Boolean(await nixpacksVersion());

async function repo(tree: FixtureTree): Promise<FixtureRepo> {
  const fixture = new FixtureRepo();
  repos.push(fixture);
  return fixture.start(tree);
}

async function prepare(fixture: FixtureRepo, options: Partial<PrepareImageOptions> = {}) {
  const result = await prepareImage({
    containerId: fixture.container,
    repoName: `langs/${run}`,
    source: `/test/langs/${run}`,
    policy: 'clone-then-cut',
    builder: 'builtin',
    baseImages,
    ...options,
  });
  if (result.image.startsWith('ca-sbx:')) images.add(result.image);
  return result;
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

describe('prepareImage: python and go with local path dependencies (real engine)', () => {
  it('python: a local path requirement resolves from /work/repo at run time', async () => {
    const fixture = await repo({
      'requirements.txt': '# our own library, from the tree\n-e ./libs/mylib\n',
      'libs/mylib/pyproject.toml': '[project]\nname = "mylib"\nversion = "0.1.0"\n',
      'libs/mylib/src/mylib/__init__.py': 'def hello():\n    return "hello from mylib"\n',
      'main.py': 'import mylib\nprint(mylib.hello())\n',
    });
    const result = await prepare(fixture);
    expect(result).toMatchObject({
      provider: 'python',
      cacheHit: false,
      depsInstalled: true,
      linkNodeModules: false,
    });
    expect(result.notes.join('\n')).toMatch(
      /local path dependencies on PYTHONPATH from \/work\/repo: libs\/mylib/,
    );
    const box = await fixture.runBox(
      result.image,
      'python3 main.py && cd /tmp && python3 -c "import mylib; print(mylib.__file__)"',
    );
    expect(box.stderr).toBe('');
    expect(box.stdout).toBe('hello from mylib\n/work/repo/libs/mylib/src/mylib/__init__.py\n');
    // A source edit of the library is live in the box: nothing of it was baked into the image.
    await fixture.write({ 'libs/mylib/src/mylib/__init__.py': 'def hello():\n    return "edited"\n' });
    expect((await fixture.runBox(result.image, 'python3 main.py')).stdout).toBe('edited\n');
    expect((await prepare(fixture)).cacheHit).toBe(true);
  });

  it('go: a replace directive into the repo builds and runs in the box (network none), go.mod untouched', async () => {
    // No `go` line, as google/uuid's go.mod: go's -mod=mod would add one on the first build.
    const goMod =
      'module example.com/app\n\nrequire example.com/mylib v0.0.0\n\nreplace example.com/mylib => ./libs/mylib\n';
    const fixture = await repo({
      'go.mod': goMod,
      'main.go':
        'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/mylib"\n)\n\nfunc main() { fmt.Println(mylib.Hello()) }\n',
      'libs/mylib/go.mod': 'module example.com/mylib\n\ngo 1.19\n',
      'libs/mylib/mylib.go': 'package mylib\n\nfunc Hello() string { return "hello from go mylib" }\n',
    });
    const result = await prepare(fixture);
    expect(result).toMatchObject({ provider: 'go', depsInstalled: true });
    const box = await fixture.runBox(
      result.image,
      'go env GOPATH GOMODCACHE GOFLAGS && go run . && go vet ./... && cat go.mod',
    );
    expect(box.stderr).toBe('');
    expect(box.stdout).toBe(`/deps/go\n/deps/go/pkg/mod\n\nhello from go mylib\n${goMod}`);
  });

  it('plain: no known provider gets the plain base with our layout', async () => {
    const fixture = await repo({ 'README.md': '# hi\n', Gemfile: "source 'https://rubygems.org'\n" });
    const result = await prepare(fixture);
    expect(result).toMatchObject({ provider: 'plain' });
    const box = await fixture.runBox(result.image, 'id -u; echo $HOME; stat -c %u /work/repo');
    expect(box.stdout).toBe('1000\n/tmp\n1000\n');
    // No install to run: no build of ours either (the prep image is the base's, made once).
    expect(argvs.filter((argv) => argv[0] === 'build' && !argv.includes('--tag'))).toEqual([]);
  });
});

describe('readManifests on a hostile repo (real engine)', () => {
  it('skips symlinked manifests without following them, handles odd names, prunes', async () => {
    const fixture = await repo({
      'package.json': '{"name":"x"}',
      'evil/package.json': { symlink: '/etc/passwd' },
      'evil2/go.mod': { symlink: '../package.json' },
      'we\nird/requirements.txt': 'a==1\n',
      'sp ace/ünï/Cargo.toml': '[package]\nname="y"\n',
      '-rf/pyproject.toml': '[project]\n',
      'node_modules/dep/package.json': '{}',
      'vendor/x/go.mod': 'module v\n',
      // A vendor directory is entered for Go's vendor list alone, never followed through a link.
      'vendor/modules.txt': '# example.com/x v1.0.0\n',
      'vendor/package.json': '{}',
      'vendor/x/vendor/modules.txt': 'nested\n',
      'node_modules/vendor/modules.txt': 'pruned\n',
      'lib/vendor/modules.txt': { symlink: '/etc/passwd' },
      '.git/config/package.json': '{}',
      'src/index.js': 'nope',
    });
    const skipped: SkippedManifest[] = [];
    const files = await readManifests(fixture.container, { onSkip: (s) => skipped.push(s) });
    expect(files.map((f) => f.path)).toEqual([
      '-rf/pyproject.toml',
      'package.json',
      'sp ace/ünï/Cargo.toml',
      'vendor/modules.txt',
    ]);
    expect(files.some((f) => f.content.toString().includes('root:'))).toBe(false);
    expect(skipped).toEqual(
      expect.arrayContaining([
        { path: 'evil/package.json', reason: 'symlink (not followed)' },
        { path: 'evil2/go.mod', reason: 'symlink (not followed)' },
        { path: 'we\nird/requirements.txt', reason: 'control character or backslash in name' },
      ]),
    );
  });

  it('reads the package archives the manifests name, by name: no symlink at any depth, nothing outside', async () => {
    const fixture = await repo({
      'package.json': JSON.stringify({
        dependencies: {
          a: 'file:vendor/a-1.0.0.tgz',
          linked: 'file:vendor/linked.tgz',
          aliased: 'file:alias/a-1.0.0.tgz',
          missing: 'file:vendor/missing.tgz',
          big: 'file:vendor/big.tgz',
          up: 'file:../outside.tgz',
        },
      }),
      'pnpm-lock.yaml': "  c@file:libs/c-1.0.0.tgz:\n    resolution: {tarball: 'file:libs/c-1.0.0.tgz'}\n",
      // Pruned from the manifest walk (vendor/), read because a manifest names it.
      'vendor/a-1.0.0.tgz': 'archive a',
      'vendor/linked.tgz': { symlink: '/etc/passwd' },
      // A folder link: the real path is another one than the named.
      alias: { symlink: 'vendor' },
      'libs/c-1.0.0.tgz': 'archive c',
      'libs/unnamed.tgz': 'never read',
      // Over the file cap: left out, the read goes on (the install may never need it).
      'vendor/big.tgz': 'x'.repeat(70_000),
    });
    const files = await readManifests(fixture.container, { maxFileBytes: 64 * 1024 });
    expect(files.map((f) => [f.path, f.content.toString()])).toEqual([
      ['libs/c-1.0.0.tgz', 'archive c'],
      ['package.json', expect.any(String)],
      ['pnpm-lock.yaml', expect.any(String)],
      ['vendor/a-1.0.0.tgz', 'archive a'],
    ]);
  });

  it('caps the count and sizes with ManifestLimitError', async () => {
    const tree: FixtureTree = {};
    for (let i = 0; i < 30; i++) tree[`p${i}/package.json`] = '{}';
    tree['big/yarn.lock'] = 'x'.repeat(200_000);
    const fixture = await repo(tree);
    await expect(readManifests(fixture.container, { maxFiles: 20 })).rejects.toThrow(ManifestLimitError);
    await expect(readManifests(fixture.container, { maxFileBytes: 100_000 })).rejects.toMatchObject({
      limit: 'maxFileBytes',
    });
    await expect(readManifests(fixture.container, { maxTotalBytes: 150_000 })).rejects.toMatchObject({
      limit: 'maxTotalBytes',
    });
    expect(await readManifests(fixture.container)).toHaveLength(31);
  });

  it('a missing base image is one BaseImageMissingError naming it', async () => {
    const fixture = await repo({ 'package.json': '{}' });
    const missing = `ca-sbx-base:missing-${randomUUID().slice(0, 8)}`;
    const error = await prepare(fixture, { baseImage: missing }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BaseImageMissingError);
    expect(error).toMatchObject({ kind: 'prerequisite', code: 'BASE_IMAGE_MISSING', image: missing });
    expect((error as BaseImageMissingError).hint).toMatch(/seed-images\.sh|CA_SANDBOX_BASE_IMAGE_NODE/);
  });
});

describe.skipIf(hasNixpacks)('nixpacks builder without nixpacks', () => {
  it('--builder nixpacks is a prerequisite error with the install hint; auto falls back to builtin', async () => {
    const fixture = await repo({ 'package.json': '{}' });
    const error = await prepare(fixture, { builder: 'nixpacks', policy: 'offline' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NixpacksMissingError);
    expect(error).toMatchObject({
      kind: 'prerequisite',
      code: 'NIXPACKS_MISSING',
      hint: expect.stringContaining('nixpacks'),
    });
    expect((await prepare(fixture, { builder: 'auto', policy: 'offline' })).builder).toBe('builtin');
  });
});

describe.skipIf(!hasNixpacks)('nixpacks builder (binary present)', () => {
  it('builds a node repo from the nixpacks plan into /deps', async () => {
    const fixture = await repo({
      'package.json': JSON.stringify({ name: 'n', version: '1.0.0', dependencies: {} }),
    });
    const result = await prepare(fixture, { builder: 'nixpacks' });
    expect(result).toMatchObject({ builder: 'nixpacks', provider: 'node', depsInstalled: true });
  });
});
