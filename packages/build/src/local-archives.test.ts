import { describe, expect, it } from 'vitest';
import { localArchivePaths, MAX_LOCAL_ARCHIVES } from './local-archives.js';

const file = (path: string, text: string) => ({ path, content: Buffer.from(text, 'utf8') });

describe('localArchivePaths', () => {
  it('finds the archives package.json and every lockfile format name, relative to the file', () => {
    const paths = localArchivePaths([
      file('package.json', JSON.stringify({ dependencies: { a: 'file:vendor/a-1.0.0.tgz', b: '^1.0.0' } })),
      file('packages/app/package.json', JSON.stringify({ dependencies: { c: 'file:../../libs/c.tar.gz' } })),
      file('package-lock.json', '{"packages":{"node_modules/a":{"resolved":"file:vendor/a-1.0.0.tgz"}}}'),
      file(
        'pnpm-lock.yaml',
        "  d@file:tools/d-2.0.0.tgz:\n    resolution: {tarball: 'file:tools/d-2.0.0.tgz'}\n",
      ),
      file('yarn.lock', '"e@file:./e-1.0.0.tar":\n  resolved "file:./e-1.0.0.tar#abc"\n'),
      // Not a node manifest: not read for references.
      file('README.md', 'file:notes/x.tgz'),
    ]);
    expect(paths).toEqual(['e-1.0.0.tar', 'libs/c.tar.gz', 'tools/d-2.0.0.tgz', 'vendor/a-1.0.0.tgz']);
  });

  it('drops what leaves the repo or is no safe path (hostile manifests)', () => {
    const paths = localArchivePaths([
      file(
        'package.json',
        JSON.stringify({
          dependencies: {
            up: 'file:../outside.tgz',
            abs: 'file:/etc/shadow.tgz',
            deep: 'file:a/../../b.tgz',
            dir: 'file:packages/lib',
            link: 'link:vendor/x.tgz',
            ok: 'file:./vendor/./ok.tgz',
            git: 'file:.git/x.tgz',
            installed: 'file:node_modules/y/z.tgz',
          },
        }),
      ),
    ]);
    expect(paths).toEqual(['vendor/ok.tgz']);
  });

  it('reads at most MAX_LOCAL_ARCHIVES', () => {
    const deps = Object.fromEntries(
      Array.from({ length: MAX_LOCAL_ARCHIVES + 50 }, (_, i) => [`d${i}`, `file:v/d${i}.tgz`]),
    );
    expect(localArchivePaths([file('package.json', JSON.stringify({ dependencies: deps }))])).toHaveLength(
      MAX_LOCAL_ARCHIVES,
    );
  });
});
