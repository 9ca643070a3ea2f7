import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkReadPath, checkWritePath, isWithin, rootsFromUris } from './host-paths.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'ca-sbx-paths-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const root = join(base, 'root');
const outside = join(base, 'outside');
mkdirSync(join(root, 'sub'), { recursive: true });
mkdirSync(outside);
writeFileSync(join(outside, 'id_rsa'), 'key');
symlinkSync(outside, join(root, 'link-out'));
symlinkSync(join(root, 'sub'), join(root, 'link-in'));
symlinkSync(join(outside, 'id_rsa'), join(root, 'file-out'));

describe('host path limits of the MCP server', () => {
  it('isWithin compares path segments, not prefixes', () => {
    expect(isWithin('/a/b', '/a/b')).toBe(true);
    expect(isWithin('/a/b', '/a/b/c')).toBe(true);
    expect(isWithin('/a/b', '/a/bc')).toBe(false);
    expect(isWithin('/a/b', '/a')).toBe(false);
  });

  it('takes file: URIs of the client roots only', () => {
    expect(rootsFromUris(['file:///srv/x', 'https://example.test/y', 'file://host/z'])).toEqual(['/srv/x']);
  });

  it('reads only under a root, after resolving symlinks', async () => {
    await expect(checkReadPath(join(root, 'sub'), [root], 'test')).resolves.toBe(join(root, 'sub'));
    await expect(checkReadPath(join(root, 'link-in'), [root], 'test')).resolves.toBe(join(root, 'sub'));
    await expect(checkReadPath(outside, [root], 'test')).rejects.toThrow(
      new RegExp(`outside the allowed roots: ${root}$`),
    );
    await expect(checkReadPath(join(root, 'link-out'), [root], 'test')).rejects.toThrow(/really .*outside/);
    await expect(checkReadPath(join(root, 'sub'), [], '0 roots')).rejects.toMatchObject({
      code: 'HOST_PATH_REFUSED',
      kind: 'usage',
    });
  });

  it('writes only under the output root, relative paths inside it', async () => {
    await expect(checkWritePath('a.txt', root)).resolves.toBe(join(root, 'a.txt'));
    await expect(checkWritePath(join(root, 'sub', 'new'), root)).resolves.toBe(join(root, 'sub', 'new'));
    await expect(checkWritePath(root, root)).resolves.toBe(root);
    await expect(checkWritePath('link-in/x', root)).resolves.toBe(join(root, 'sub', 'x'));
    for (const bad of [
      join(outside, '.ssh'),
      '../outside/x',
      '/etc/passwd',
      'link-out/x',
      'link-out',
      'file-out',
    ])
      await expect(checkWritePath(bad, root)).rejects.toThrow(new RegExp(`outside the output root ${root}$`));
  });

  it('creates a missing output root, private', async () => {
    const fresh = join(base, 'fresh', 'out');
    await expect(checkWritePath('x', fresh)).resolves.toBe(join(fresh, 'x'));
  });
});
