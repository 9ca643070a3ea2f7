// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the values are Dockerfile and shell text, where ${NAME} is literal
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tar from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { envLines } from './dockerfile.js';
import { installEnv, manifestsArchive } from './install-image.js';

describe('installEnv', () => {
  const image = ['PATH=/usr/local/bin:/usr/bin:/bin', 'NODE_VERSION=22.23.5'];

  it("resolves $NAME and ${NAME} against the image's variables and the entries before, as ENV lines do", () => {
    const entries = [
      { name: 'NODE_PATH', value: '/deps/node_modules' },
      { name: 'PATH', value: '/deps/pm/bin:/deps/node_modules/.bin:$PATH', expand: true },
      { name: 'PATH', value: '/deps/runtime/bin:${PATH}', expand: true },
      { name: 'LITERAL', value: 'a $PATH b' },
      { name: 'UNSET', value: 'x$NOPE', expand: true },
    ];
    expect(installEnv(image, entries)).toEqual([
      'NODE_PATH=/deps/node_modules',
      'PATH=/deps/runtime/bin:/deps/pm/bin:/deps/node_modules/.bin:/usr/local/bin:/usr/bin:/bin',
      'LITERAL=a $PATH b',
      'UNSET=x',
    ]);
    // The Dockerfile's ENV lines for the same entries are what a build gave before: same meaning.
    expect(envLines(entries)).toEqual([
      'ENV NODE_PATH="/deps/node_modules" PATH="/deps/pm/bin:/deps/node_modules/.bin:$PATH"',
      'ENV PATH="/deps/runtime/bin:${PATH}" LITERAL="a \\$PATH b" UNSET="x$NOPE"',
    ]);
  });

  it('refuses what docker would read otherwise: other $ forms, escapes, bad names, control characters', () => {
    expect(() => installEnv(image, [{ name: 'A', value: '${PATH:-/bin}', expand: true }])).toThrow(
      /only \$NAME/,
    );
    expect(() => installEnv(image, [{ name: 'A', value: '\\$PATH', expand: true }])).toThrow(/only \$NAME/);
    expect(() => installEnv(image, [{ name: 'A B', value: 'x' }])).toThrow(/invalid env name/);
    expect(() => installEnv(image, [{ name: 'A', value: 'x\ny' }])).toThrow(/control character/);
  });
});

describe('manifestsArchive', () => {
  async function entriesOf(archive: Buffer) {
    const seen: { name: string; type: string; mode: number; uid: number; gid: number; body: string }[] = [];
    const extract = tar.extract();
    const done = new Promise<void>((resolve, reject) => {
      extract.on('entry', (header, stream, next) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: unknown) => {
          chunks.push(chunk as Buffer);
        });
        stream.on('end', () => {
          seen.push({
            name: header.name,
            type: header.type ?? '',
            mode: header.mode ?? 0,
            uid: header.uid ?? -1,
            gid: header.gid ?? -1,
            body: Buffer.concat(chunks).toString('utf8'),
          });
          next();
        });
      });
      extract.on('finish', resolve);
      extract.on('error', reject);
    });
    extract.end(archive);
    await done;
    return seen;
  }

  it("the folder's files and folders, relative, the box user's, 0644 and 0755", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ca-sbx-manifests-'));
    try {
      await mkdir(join(dir, 'packages', 'a'), { recursive: true });
      await writeFile(join(dir, 'package.json'), '{"name":"root"}');
      await writeFile(join(dir, 'packages', 'a', 'package.json'), '{"name":"a"}', { mode: 0o600 });
      expect(await entriesOf(await manifestsArchive(dir))).toEqual([
        { name: 'package.json', type: 'file', mode: 0o644, uid: 1000, gid: 1000, body: '{"name":"root"}' },
        { name: 'packages', type: 'directory', mode: 0o755, uid: 1000, gid: 1000, body: '' },
        { name: 'packages/a', type: 'directory', mode: 0o755, uid: 1000, gid: 1000, body: '' },
        {
          name: 'packages/a/package.json',
          type: 'file',
          mode: 0o644,
          uid: 1000,
          gid: 1000,
          body: '{"name":"a"}',
        },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a link (the context holds regular files only)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ca-sbx-manifests-'));
    try {
      await symlink('/etc/passwd', join(dir, 'package.json'));
      await expect(manifestsArchive(dir)).rejects.toThrow(/not a file in the build context/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
