import { mkdir, mkdtemp, rm, symlink, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INSTALL_PID1 } from '@ca-sandbox/docker';
import { afterAll, describe, expect, it } from 'vitest';
import { isOwnBuildCommand, isOwnInstallContainer, staleBuildDirectories } from './build-leftovers.js';
import {
  installCommand,
  NO_NEW_PRIVS,
  PREP_SCRIPT,
  renderDockerfile,
  renderPrepDockerfile,
} from './dockerfile.js';
import type { ManifestFile } from './manifests.js';
import { detectProvider } from './provider.js';
import { builtinRecipe } from './recipe.js';
import { TOOLCHAIN_MARKER } from './toolchain.js';

const f = (path: string, content = ''): ManifestFile => ({ path, content: Buffer.from(content) });
const node = [f('package.json', '{}'), f('package-lock.json', '{}')];
const labels = {
  'ca.sandbox.build': '1',
  'ca.sandbox.build.repo': 'demo',
  'ca.sandbox.build.dephash': 'ab12',
};
const render = (files: ManifestFile[], buildLabels = labels) =>
  renderDockerfile('ca-sbx-base:node', builtinRecipe(files, detectProvider(files)), { buildLabels });

function runCommands(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('RUN '))
    .map((line) => JSON.parse(line.slice(4)) as string[]);
}

describe('deps Dockerfile hardening', () => {
  it('labels every step: the LABEL comes right after FROM', () => {
    const lines = render(node).split('\n');
    expect(lines[1]).toBe(
      'LABEL ca.sandbox.build=1 ca.sandbox.build.repo=demo ca.sandbox.build.dephash=ab12',
    );
  });

  it('refuses a label that could end the instruction or add another', () => {
    expect(() => render(node, { ...labels, 'ca.sandbox.build.repo': 'x\nRUN id' })).toThrow(
      /invalid build label/,
    );
    expect(() => render(node, { ...labels, 'ca.sandbox.build.repo': 'a b' })).toThrow(/invalid build label/);
  });

  it('runs the install, and the probe after it, under setpriv --no-new-privs, FROM a prep image whose root step strips setuid/setgid bits', () => {
    const prep = renderPrepDockerfile('ca-sbx-base:node', { 'ca.sandbox.build': '1' });
    const [setup, ...more] = runCommands(prep);
    expect(more).toEqual([]);
    expect(setup?.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(setup?.[2]).toContain('-perm -4000 -o -perm -2000');
    expect(setup?.[2]).toContain('chmod ug-s');
    expect(setup?.[2]).toContain('[ -x /usr/bin/setpriv ]');
    // As root, and labelled first: a failed prep build's steps are found by their labels.
    expect(prep.split('\n').slice(1, 3)).toEqual(['LABEL ca.sandbox.build=1', 'USER 0:0']);
    const deps = render(node);
    expect(deps.split('\n')[0]).toBe('FROM ca-sbx-base:node');
    // The Dockerfile runs nothing: the install is a container of its image (run-install.ts).
    expect(runCommands(deps)).toEqual([]);
    const install = installCommand(builtinRecipe(node, detectProvider(node)));
    expect(install.slice(0, 5)).toEqual([...NO_NEW_PRIVS, '/bin/sh', '-c']);
    // One stream (stderr merged first), then the install and the probe.
    expect(install[5]?.startsWith('exec 2>&1\n')).toBe(true);
    expect(install[5]).toContain('npm ci');
    expect(install[5]).toContain(TOOLCHAIN_MARKER);
    // The install container's PID 1 (it holds the container for its creator) is checked for.
    expect(PREP_SCRIPT).toContain(`[ -x ${INSTALL_PID1[0]} ]`);
    // The install user is the image's (its container runs as it too).
    expect(deps).toContain('\nUSER 1000:1000\n');
    // Both are recognisable as ours when a killed build leaves them behind.
    expect(isOwnBuildCommand(setup)).toBe(true);
    expect(isOwnBuildCommand(install)).toBe(true);
  });

  it('without an install step the toolchain probe is the step, under setpriv too', () => {
    const readme = [f('README.md')];
    const probe = installCommand(builtinRecipe(readme, detectProvider(readme)));
    expect(probe.slice(0, 3)).toEqual([...NO_NEW_PRIVS]);
    expect(probe[5]).toContain(TOOLCHAIN_MARKER);
    expect(isOwnBuildCommand(probe)).toBe(true);
  });

  it('isOwnInstallContainer: our install container by its name and its PID 1 alone', () => {
    expect(isOwnInstallContainer('/ca-sbx_install-0123456789abcdef01234567', ['/bin/cat'])).toBe(true);
    expect(isOwnInstallContainer('ca-sbx_install-0123456789abcdef01234567', ['/bin/cat'])).toBe(true);
    expect(isOwnInstallContainer('/someone-else', ['/bin/cat'])).toBe(false);
    expect(isOwnInstallContainer('/ca-sbx_install-0123456789abcdef01234567', ['/bin/cat', '-v'])).toBe(false);
    expect(isOwnInstallContainer('/ca-sbx_install-0123456789abcdef01234567', ['sleep', '1'])).toBe(false);
  });

  it('isOwnBuildCommand: only our two RUN shapes', () => {
    expect(
      isOwnBuildCommand(['/bin/sh', '-c', 'mkdir -p /deps/src /work/repo && chown 1000:1000 /deps']),
    ).toBe(true);
    expect(isOwnBuildCommand(['/bin/sh', '-c', 'npm ci'])).toBe(false);
    expect(isOwnBuildCommand(['sleep', 'infinity'])).toBe(false);
    expect(isOwnBuildCommand('mkdir -p /deps/src /work/repo && chown 1000:1000')).toBe(false);
    expect(isOwnBuildCommand(null)).toBe(false);
  });
});

describe('staleBuildDirectories', () => {
  const roots: string[] = [];
  afterAll(async () => {
    for (const root of roots) await rm(root, { recursive: true, force: true });
  });

  it('lists directories of dead build processes and old pid-less ones; never live ones or links', async () => {
    const root = await mkdtemp(join(tmpdir(), 'bn-stale-'));
    roots.push(root);
    const dead = 4_000_000_000; // above pid_max: no such process
    await mkdir(join(root, `ca-sbx-build-${dead}-AbC123`));
    await mkdir(join(root, `ca-sbx-build-${process.pid}-AbC123`));
    await mkdir(join(root, 'ca-sbx-build-old123'));
    await mkdir(join(root, 'ca-sbx-build-new123'));
    const dayAgo = (Date.now() - 25 * 3_600_000) / 1000;
    await utimes(join(root, 'ca-sbx-build-old123'), dayAgo, dayAgo);
    await mkdir(join(root, 'elsewhere'));
    await symlink(join(root, 'elsewhere'), join(root, `ca-sbx-build-${dead}-Link12`));
    await mkdir(join(root, `ca-sbx-build-${dead}-x`)); // not our name shape
    const stale = await staleBuildDirectories({}, root);
    expect(stale.sort()).toEqual([
      join(root, `ca-sbx-build-${dead}-AbC123`),
      join(root, 'ca-sbx-build-old123'),
    ]);
    // A scoped look only takes the named pids.
    expect(await staleBuildDirectories({ pids: [dead] }, root)).toEqual([
      join(root, `ca-sbx-build-${dead}-AbC123`),
    ]);
    expect(await staleBuildDirectories({ pids: [1234567] }, root)).toEqual([]);
  });
});
