// The prep image: the root step of every deps build (folders, setuid strip, setpriv check), built
// once per base image and shared; a failed prep build leaves nothing.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerSync, engineReady, TEST_BASE } from '../test/real-engine.js';
import { CA_BUNDLE_PATH, EXTRA_CA_PATH, loadExtraCa } from './ca-trust.js';
import { ImageBuildError } from './errors.js';
import { ensurePrepImage, prepImageTag } from './prep-image.js';

const BASE = TEST_BASE;
const ready = engineReady;
const docker = dockerSync;
const limits = { memory: '512m', cpus: 1, processes: 256, fileSize: 1024 ** 3 };

describe.skipIf(!ready)('ensurePrepImage (real engine)', () => {
  const made: string[] = [];
  afterAll(() => {
    for (const image of made) {
      try {
        docker('image', 'rm', '--force', image);
      } catch {}
    }
  });

  it('builds the root step once per base image: the second deps build (another repo) reuses it', async () => {
    const baseId = docker('image', 'inspect', '--format', '{{.Id}}', BASE);
    const logged: string[] = [];
    const input = { baseImage: BASE, baseImageId: baseId, limits, timeoutMs: 300_000 };
    const first = await ensurePrepImage({ ...input, log: (line) => logged.push(line) });
    // Named by its tag: a concurrent build that re-tags it cannot leave a deps build an id that
    // is gone.
    expect(first).toBe(prepImageTag(baseId));
    const again: string[] = [];
    expect(await ensurePrepImage({ ...input, log: (line) => again.push(line) })).toBe(first);
    expect(again).toEqual([]);
    // What it holds: root's set-up done, no setuid/setgid file left, the box's folders and start dir.
    const config = JSON.parse(docker('image', 'inspect', '--format', '{{json .Config}}', first)) as {
      WorkingDir: string;
    };
    expect(config.WorkingDir).toBe('/work/repo');
    const probe = docker(
      'run',
      '--rm',
      '--network',
      'none',
      first,
      'sh',
      '-c',
      'find / -xdev -type f \\( -perm -4000 -o -perm -2000 \\) -print; stat -c %u:%g /deps /deps/src /work/repo',
    );
    expect(probe.split('\n')).toEqual(['1000:1000', '1000:1000', '1000:1000']);
  }, 300_000);

  it("bakes the user's CA bundle root's, system CAs first; another bundle is another prep image", async () => {
    const baseId = docker('image', 'inspect', '--format', '{{.Id}}', BASE);
    const dir = mkdtempSync(join(tmpdir(), 'ca-prep-ca-'));
    try {
      const bundle = (name: string) => {
        const path = join(dir, `${name}.pem`);
        execFileSync(
          'openssl',
          ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, `${name}.key`)].concat([
            '-out',
            path,
            '-days',
            '1',
            '-subj',
            `/CN=ca-sandbox prep ${name}`,
          ]),
          { stdio: 'ignore' },
        );
        return loadExtraCa(path);
      };
      const [one, two] = [bundle('one'), bundle('two')];
      const input = { baseImage: BASE, baseImageId: baseId, limits, timeoutMs: 300_000, log: () => {} };
      const tag = prepImageTag(baseId, one.hash);
      made.push(tag);
      expect(tag).not.toBe(prepImageTag(baseId));
      expect(prepImageTag(baseId, two.hash)).not.toBe(tag);
      const built = await ensurePrepImage({ ...input, ca: one });
      expect(built).toBe(tag);
      const probe = docker(
        'run',
        '--rm',
        '--network',
        'none',
        '--user',
        '1000:1000',
        built,
        'sh',
        '-c',
        `sha256sum < ${EXTRA_CA_PATH}; stat -c '%u:%g %a' /etc/ca-sandbox ${EXTRA_CA_PATH} ${CA_BUNDLE_PATH}; ` +
          `grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt ${CA_BUNDLE_PATH}; ` +
          `tail -c ${one.pem.length} ${CA_BUNDLE_PATH} | cmp - ${EXTRA_CA_PATH} && echo tail-is-extra; ` +
          `echo x >> ${EXTRA_CA_PATH} 2>/dev/null || echo not-writable`,
      ).split('\n');
      expect(probe[0]).toBe(`${one.hash}  -`);
      expect(probe.slice(1, 4)).toEqual(['0:0 755', '0:0 644', '0:0 644']);
      const system = Number(probe[4]?.split(':').at(-1));
      expect(system).toBeGreaterThan(0);
      expect(Number(probe[5]?.split(':').at(-1))).toBe(system + 1);
      expect(probe.slice(6)).toEqual(['tail-is-extra', 'not-writable']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it('a base without setpriv: the prep build fails saying so and leaves no image', async () => {
    const context = mkdtempSync(join(tmpdir(), 'ca-prep-int-'));
    const broken = `ca-sbx-test-nosetpriv:${randomBytes(4).toString('hex')}`;
    try {
      writeFileSync(join(context, 'Dockerfile'), `FROM ${BASE}\nRUN rm -f /usr/bin/setpriv\n`);
      execFileSync('docker', ['build', '--quiet', '--network', 'none', '--tag', broken, context], {
        stdio: 'ignore',
        env: { ...process.env, DOCKER_BUILDKIT: '0' },
      });
      made.push(broken);
      const brokenId = docker('image', 'inspect', '--format', '{{.Id}}', broken);
      const error = await ensurePrepImage({
        baseImage: broken,
        baseImageId: brokenId,
        limits,
        timeoutMs: 300_000,
        log: () => {},
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ImageBuildError);
      expect((error as ImageBuildError).message).toMatch(/the base image has no \/usr\/bin\/setpriv/);
      // Not the tag, and no step image of the prep build (every one descends from its first,
      // the LABEL step on this base): nothing is built on this base but what the test made.
      expect(() => docker('image', 'inspect', prepImageTag(brokenId))).toThrow();
      const later = docker('image', 'ls', '--all', '--quiet', '--no-trunc', '--filter', `since=${broken}`);
      const children = later
        .split('\n')
        .filter(Boolean)
        .filter((id) => docker('image', 'inspect', '--format', '{{.Parent}}', id) === brokenId);
      expect(children).toEqual([]);
    } finally {
      rmSync(context, { recursive: true, force: true });
    }
  }, 300_000);
});
