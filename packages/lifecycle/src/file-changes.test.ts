import { describe, expect, it } from 'vitest';
import { cloneFacts } from './clone-facts.js';
import { compareListings, FOLDER_ROWS } from './file-changes.js';
import { ListingEntries, ListingReader, listingScript, parseListing, readListing } from './listing-format.js';

interface Row {
  root?: '/work/repo' | '/tmp' | '/dev/shm' | '/work/repo/.';
  type?: string;
  mode?: string;
  size?: number;
  mtime?: string;
  ctime?: string;
  path: string | Buffer;
  target?: string;
}

/** find's bytes for these rows, as LISTING_FORMAT prints them. */
function listing(rows: Row[], cut = 0): Buffer {
  const parts = rows.map((row) =>
    Buffer.concat([
      Buffer.from(
        `${row.root ?? '/work/repo'} ${row.type ?? 'f'} ${row.mode ?? '644'} ${row.size ?? 1} ${row.mtime ?? '100.5'} ${row.ctime ?? '100.5'}\0`,
      ),
      Buffer.isBuffer(row.path) ? row.path : Buffer.from(row.path),
      Buffer.from(`\0${row.target ?? ''}\0`),
    ]),
  );
  const all = Buffer.concat([Buffer.from('/work/repo d 755 4096 1.0 1.0\0\0\0'), ...parts]);
  return cut ? all.subarray(0, all.length - cut) : all;
}

const compare = (before: Row[], now: Row[]) => compareListings(parseListing(listing(before)), listing(now));

describe('file changes', () => {
  it('a new or deleted folder of many entries is one row with its counts; what matters inside is listed all the same', () => {
    const many = (dir: string, n: number, root?: Row['root']): Row[] =>
      Array.from({ length: n }, (_, i) => ({ root, path: `${dir}/f${i}`, size: 10 }));
    const before: Row[] = [
      { path: 'src', type: 'd' },
      { path: 'src/a.js' },
      { path: 'old', type: 'd' },
      ...many('old', FOLDER_ROWS + 1),
      { path: 'few', type: 'd' },
      ...many('few', 2),
    ];
    const now: Row[] = [
      { path: 'src', type: 'd' },
      { path: 'src/a.js' },
      { path: 'out', type: 'd' },
      { path: 'out/sub', type: 'd' },
      ...many('out/sub', FOLDER_ROWS),
      // Inside the summarised folder: a setuid file, an executable and a VS Code task.
      { path: 'out/sub/sh', mode: '4755' },
      { path: 'out/tool', mode: '755' },
      { path: 'out/.vscode', type: 'd' },
      { path: 'out/.vscode/tasks.json' },
      // Links inside it: one out of the folder is listed, one within it is counted.
      { path: 'out/key', type: 'l', target: '/home/user/.ssh/id_rsa' },
      { path: 'out/near', type: 'l', target: 'sub/f1' },
      { path: 'small', type: 'd' },
      { path: 'small/x.txt' },
      { root: '/tmp', path: '.npm', type: 'd' },
      ...many('.npm', FOLDER_ROWS + 5, '/tmp'),
      { root: '/tmp', path: 'drop.sh', mode: '755' },
    ];
    const changes = compare(before, now);
    const folder = changes.added.find((file) => file.path === '/work/repo/out');
    expect(folder?.contents).toEqual({
      files: FOLDER_ROWS + 2,
      directories: 2,
      symlinks: 1,
      other: 0,
      bytes: FOLDER_ROWS * 10 + 2,
    });
    expect(changes.added.map((file) => file.path)).toEqual([
      '/work/repo/out',
      '/work/repo/out/.vscode/tasks.json',
      '/work/repo/out/key',
      '/work/repo/small',
      '/work/repo/small/x.txt',
    ]);
    expect(changes.setuid.map((file) => file.path)).toEqual(['/work/repo/out/sub/sh']);
    expect(changes.newExecutables.map((file) => file.path)).toEqual([
      '/tmp/drop.sh',
      '/work/repo/out/sub/sh',
      '/work/repo/out/tool',
    ]);
    // A deleted folder of many is one row; one of few is listed entry by entry.
    expect(changes.deleted.map((file) => [file.path, file.contents?.files])).toEqual([
      ['/work/repo/few', undefined],
      ['/work/repo/few/f0', undefined],
      ['/work/repo/few/f1', undefined],
      ['/work/repo/old', FOLDER_ROWS + 1],
    ]);
    expect(changes.outsideRepo.map((file) => [file.path, file.contents?.files])).toEqual([
      ['/tmp/.npm', FOLDER_ROWS + 5],
      ['/tmp/drop.sh', undefined],
    ]);
    // allFiles: every entry.
    const all = compareListings(parseListing(listing(before)), listing(now), { allFiles: true });
    expect(all.added).toHaveLength(FOLDER_ROWS + 10);
    expect(all.added.every((file) => file.contents === undefined)).toBe(true);
    expect(all.deleted).toHaveLength(FOLDER_ROWS + 5);
  });

  it('a folder of the clone with many entries modified is one row with their count; a few stay rows', () => {
    const files = (dir: string, n: number, time: string): Row[] =>
      Array.from({ length: n }, (_, i) => ({ path: `${dir}/t${i}.snap`, size: 10, ctime: time }));
    const before: Row[] = [
      { path: 'top.js' },
      { path: 'fixtures', type: 'd' },
      ...files('fixtures', FOLDER_ROWS + 20, '100.5'),
      { path: 'fixtures/run.sh' },
      { path: 'fixtures/.envrc' },
      { path: 'fixtures/deep', type: 'd' },
      ...files('fixtures/deep', 3, '100.5'),
    ];
    const now: Row[] = [
      { path: 'top.js', ctime: '200.5' },
      { path: 'fixtures', type: 'd' },
      // Every snapshot rewritten but ten, which stay as they were (not counted).
      ...files('fixtures', FOLDER_ROWS + 20, '200.5').map((row, i) =>
        i < 10 ? { ...row, ctime: '100.5' } : row,
      ),
      // Made executable and an .envrc rewritten: in their own lists / as rows all the same.
      { path: 'fixtures/run.sh', mode: '755', ctime: '200.5' },
      { path: 'fixtures/.envrc', size: 99, ctime: '200.5' },
      { path: 'fixtures/deep', type: 'd' },
      ...files('fixtures/deep', 3, '200.5'),
    ];
    const changes = compare(before, now);
    expect(changes.modified.map((file) => [file.path, file.changed, file.contents?.files])).toEqual([
      ['/work/repo/fixtures', ['content', 'mode'], FOLDER_ROWS + 11],
      ['/work/repo/fixtures/.envrc', ['content'], undefined],
      ['/work/repo/fixtures/deep/t0.snap', ['content'], undefined],
      ['/work/repo/fixtures/deep/t1.snap', ['content'], undefined],
      ['/work/repo/fixtures/deep/t2.snap', ['content'], undefined],
      ['/work/repo/top.js', ['content'], undefined],
    ]);
    expect(changes.modified[0]?.type).toBe('directory');
    expect(changes.modified[0]?.contents?.bytes).toBe((FOLDER_ROWS + 10) * 10 + 1);
    expect(changes.newExecutables.map((file) => file.path)).toEqual(['/work/repo/fixtures/run.sh']);
    // allFiles: every modified entry is a row.
    const all = compareListings(parseListing(listing(before)), listing(now), { allFiles: true });
    expect(all.modified).toHaveLength(FOLDER_ROWS + 10 + 1 + 1 + 3 + 1);
    expect(all.modified.every((file) => file.contents === undefined)).toBe(true);
  });

  it('a folded folder still lists what changed kind or target, and a mode a host tool may trust (red team)', () => {
    const files = (n: number, ctime: string): Row[] =>
      Array.from({ length: n }, (_, i) => ({ path: `fx/f${i}`, ctime }));
    const before: Row[] = [
      { path: 'a', type: 'd' },
      { path: 'a/x' },
      { path: 'ab', type: 'd' },
      { path: 'ab/y' },
      { path: 'fx', type: 'd' },
      { path: 'fx/cfg.json' },
      { path: 'fx/link', type: 'l', target: 'f1' },
      { path: 'fx/p' },
      { path: 'fx/w' },
      { path: 'fx/sub', type: 'd' },
      ...files(FOLDER_ROWS + 1, '100.5'),
    ];
    const now: Row[] = [
      { path: 'a', type: 'd' },
      { path: 'a/x', ctime: '200.5' },
      { path: 'ab', type: 'd' },
      { path: 'ab/y', ctime: '200.5' },
      { path: 'fx', type: 'd' },
      { path: 'fx/cfg.json', type: 'l', target: 'sub/evil', ctime: '200.5' },
      { path: 'fx/link', type: 'l', target: 'sub/other', ctime: '200.5' },
      { path: 'fx/p', type: 'p', size: 0, ctime: '200.5' },
      { path: 'fx/w', mode: '666', ctime: '200.5' },
      { path: 'fx/sub', type: 'd', mode: '777' },
      ...files(FOLDER_ROWS + 1, '200.5'),
    ];
    const changes = compare(before, now);
    expect(changes.modified.map((file) => [file.path, file.changed, file.contents?.files])).toEqual([
      ['/work/repo/a/x', ['content'], undefined],
      ['/work/repo/ab/y', ['content'], undefined],
      ['/work/repo/fx', ['content'], FOLDER_ROWS + 1],
      ['/work/repo/fx/cfg.json', ['type'], undefined],
      ['/work/repo/fx/link', ['target'], undefined],
      ['/work/repo/fx/p', ['type'], undefined],
      ['/work/repo/fx/sub', ['mode'], undefined],
      ['/work/repo/fx/w', ['mode'], undefined],
    ]);
  });

  it('lists with the system find, gated on the word go when asked', () => {
    expect(listingScript(false).split('\n')).toEqual([
      'for r do shift; [ -d "$r" ] && set -- "$@" "$r"; done',
      'exec find "$@" -xdev -printf \'%H %y %m %s %T@ %C@\\0%P\\0%l\\0\'',
    ]);
    expect(listingScript(true).split('\n').slice(0, 2)).toEqual([
      'IFS= read -r word || exit 0',
      '[ "$word" = go ] || exit 0',
    ]);
  });

  it('parses records, leaves the roots out, and stops at a record the bound cut', () => {
    const rows: Row[] = [
      { path: 'a' },
      { path: 'dir', type: 'd', mode: '755' },
      { path: 'l', type: 'l', target: 'a' },
    ];
    const whole = parseListing(listing(rows));
    expect([...whole.entries.values()].map((entry) => `${entry.root}:${entry.key}`)).toEqual([
      'repo:a',
      'repo:dir',
      'repo:l',
    ]);
    expect(whole.malformed).toBe(0);
    expect(whole.entries.get('repo', 'l')).toMatchObject({ type: 'symlink', target: 'a' });
    const cut = parseListing(listing(rows, 30));
    expect(cut.entries.size).toBe(2);
  });

  it('sees a rewrite by its ctime even when size and mtime were put back', () => {
    const changes = compare([{ path: 'src.js' }], [{ path: 'src.js', ctime: '200.1' }]);
    expect(changes.modified).toEqual([
      { path: '/work/repo/src.js', type: 'file', mode: '644', size: 1, changed: ['content'] },
    ]);
  });

  it('tells a chmod from a rewrite, and lists what became executable', () => {
    const changes = compare([{ path: 'run.sh' }], [{ path: 'run.sh', mode: '755', ctime: '300' }]);
    expect(changes.modified.map((file) => file.changed)).toEqual([['mode']]);
    expect(changes.newExecutables.map((file) => file.path)).toEqual(['/work/repo/run.sh']);
  });

  it('lists added, deleted, setuid, /tmp and what git or a host tool would run', () => {
    const changes = compare(
      [{ path: 'gone.txt' }, { path: '.git', type: 'd' }, { path: '.git/hooks', type: 'd' }],
      [
        { path: '.git', type: 'd' },
        { path: '.git/hooks', type: 'd' },
        { path: '.git/hooks/pre-commit', mode: '755' },
        { path: '.git/config' },
        { path: '.envrc' },
        { path: 'tool', mode: '4755' },
        { root: '/tmp', path: 'payload', mode: '6755' },
        { root: '/tmp', path: '.ca-sandbox-trust', type: 'd' },
        { root: '/tmp', path: '.ca-sandbox-trust/ca.pem' },
      ],
    );
    expect(changes.deleted.map((file) => file.path)).toEqual(['/work/repo/gone.txt']);
    expect(changes.added.map((file) => [file.path, file.runs !== undefined])).toEqual([
      ['/work/repo/.envrc', true],
      ['/work/repo/.git/config', true],
      ['/work/repo/.git/hooks/pre-commit', true],
      ['/work/repo/tool', false],
    ]);
    expect(changes.setuid.map((file) => `${file.path} ${file.mode}`)).toEqual([
      '/tmp/payload 6755',
      '/work/repo/tool 4755',
    ]);
    // ca-sandbox's own trust bundles are not the box's doing.
    expect(changes.outsideRepo.map((file) => file.path)).toEqual(['/tmp/payload']);
    expect(changes.newExecutables.map((file) => file.path)).toEqual([
      '/tmp/payload',
      '/work/repo/.git/hooks/pre-commit',
      '/work/repo/tool',
    ]);
  });

  it('lists what the box wrote in its view of its image: files written, files removed (whiteouts), new executables', () => {
    const image = '/work/repo/.' as const;
    const changes = compare(
      [{ path: 'node_modules', type: 'd' }],
      [
        { path: 'node_modules', type: 'd' },
        // Links into the view are the deps link too.
        {
          path: 'node_modules/is-number',
          type: 'l',
          target: '/.ca-sbx-image/deps/src/node_modules/is-number',
        },
        { path: 'node_modules/up', type: 'l', target: '/.ca-sbx-image/deps/../../etc' },
        { root: image, path: 'deps', type: 'd' },
        { root: image, path: 'deps/src/node_modules/is-number', type: 'd' },
        { root: image, path: 'deps/src/node_modules/is-number/index.js', size: 36 },
        { root: image, path: 'deps/src/node_modules/is-number/README.md', type: 'c', mode: '0', size: 0 },
        { root: image, path: 'deps/src/node_modules/.bin/tool', mode: '755' },
        { root: image, path: 'deps/src/node_modules/fifo', type: 'p', mode: '644', size: 0 },
      ],
    );
    expect(changes.depsLinks).toBe(1);
    expect(changes.added.map((file) => file.path)).toEqual(['/work/repo/node_modules/up']);
    expect(changes.inImage).toEqual([
      { path: '/.ca-sbx-image/deps/src/node_modules/.bin/tool', type: 'file', mode: '755', size: 1 },
      { path: '/.ca-sbx-image/deps/src/node_modules/fifo', type: 'other', mode: '644', size: 0 },
      {
        path: '/.ca-sbx-image/deps/src/node_modules/is-number/README.md',
        type: 'other',
        mode: '0',
        size: 0,
        changed: ['removed'],
      },
      {
        path: '/.ca-sbx-image/deps/src/node_modules/is-number/index.js',
        type: 'file',
        mode: '644',
        size: 36,
      },
    ]);
    expect(changes.newExecutables.map((file) => file.path)).toEqual([
      '/.ca-sbx-image/deps/src/node_modules/.bin/tool',
    ]);
    expect(changes.outsideRepo).toEqual([]);
  });

  it('with a repo view, what the box wrote under node_modules is written in the deps (files, whiteouts), not added', () => {
    const now = listing([
      { path: 'src', type: 'd' },
      { path: 'src/new.js', size: 3 },
      { path: 'node_modules', type: 'd' },
      { path: 'node_modules/dep', type: 'd' },
      { path: 'node_modules/dep/written.txt', size: 8 },
      { path: 'node_modules/dep/readme.md', type: 'c', mode: '0', size: 0 },
      { path: 'node_modules/.bin', type: 'd' },
      { path: 'node_modules/.bin/tool', mode: '755' },
    ]);
    const before = [{ path: 'src', type: 'd' }, { path: 'package.json' }];
    const viewed = compareListings(parseListing(listing(before)), now, { repoView: true });
    expect(viewed.added.map((file) => file.path)).toEqual(['/work/repo/src/new.js']);
    expect(viewed.inImage).toEqual([
      { path: '/work/repo/node_modules/.bin/tool', type: 'file', mode: '755', size: 1 },
      {
        path: '/work/repo/node_modules/dep/readme.md',
        type: 'other',
        mode: '0',
        size: 0,
        changed: ['removed'],
      },
      { path: '/work/repo/node_modules/dep/written.txt', type: 'file', mode: '644', size: 8 },
    ]);
    expect(viewed.newExecutables.map((file) => file.path)).toEqual(['/work/repo/node_modules/.bin/tool']);
    // A node_modules where no package.json was (no install there) is the box's own: added, and
    // what in it a host tool runs is said. A whiteout of a manifest the clone had: deleted.
    const own = compareListings(
      parseListing(listing([...before, { path: 'lib', type: 'd' }, { path: 'package-lock.json' }])),
      listing([
        { path: 'src', type: 'd' },
        { path: 'package.json' },
        { path: 'package-lock.json', type: 'c', mode: '0', size: 0 },
        { path: 'lib', type: 'd' },
        { path: 'lib/node_modules', type: 'd' },
        { path: 'lib/node_modules/evil', type: 'd' },
        { path: 'lib/node_modules/evil/index.js' },
      ]),
      { repoView: true },
    );
    expect(own.inImage).toEqual([]);
    expect(own.added.map((file) => file.path)).toEqual([
      '/work/repo/lib/node_modules/evil',
      '/work/repo/lib/node_modules/evil/index.js',
    ]);
    expect(own.deleted.map((file) => file.path)).toEqual(['/work/repo/package-lock.json']);
    expect(own.modified).toEqual([]);
    // Without a repo view the same folder is the box's own, added.
    const linked = compareListings(parseListing(listing(before)), now);
    expect(linked.inImage).toEqual([]);
    expect(linked.added.map((file) => file.path)).toContain('/work/repo/node_modules/dep/written.txt');
  });

  it('a name the image has and the view lost (a folder replaced whole) is removed once, beside a whiteout of it', () => {
    const image = '/work/repo/.' as const;
    const changes = compare(
      [],
      [
        { root: image, path: 'deps/src/node_modules/dep', type: 'd' },
        { root: image, path: 'deps/src/node_modules/dep/index.js' },
        { root: image, path: 'deps/src/node_modules/dep/gone.js', type: 'c', mode: '0', size: 0 },
        // The folder compare's records, after the upper's: one of them the whiteout's name again.
        {
          root: image,
          path: 'deps/src/node_modules/dep/gone.js',
          type: 'c',
          mode: '0',
          size: 0,
          mtime: '0',
          ctime: '0',
        },
        {
          root: image,
          path: 'deps/src/node_modules/dep/LICENSE',
          type: 'c',
          mode: '0',
          size: 0,
          mtime: '0',
          ctime: '0',
        },
      ],
    );
    expect(
      changes.inImage.map((file) => [
        file.path.slice('/.ca-sbx-image/deps/src/node_modules/dep/'.length),
        file.changed,
      ]),
    ).toEqual([
      ['LICENSE', ['removed']],
      ['gone.js', ['removed']],
      ['index.js', undefined],
    ]);
  });

  it('counts the deps link (on either side of the race with the clone listing) but lists other writes there', () => {
    const link = { type: 'l', target: '/deps/src/node_modules/vitest' };
    const changes = compare(
      [
        { path: 'node_modules', type: 'd' },
        { path: 'node_modules/chalk', type: 'l', target: '/deps/src/node_modules/chalk' },
      ],
      [
        { path: 'node_modules', type: 'd' },
        { path: 'node_modules/vitest', ...link },
        { path: 'packages/a/node_modules', type: 'd' },
        { path: 'packages/a/node_modules/x', type: 'l', target: '/deps/src/packages/a/node_modules/x' },
        { path: 'node_modules/.cache', type: 'd' },
        { path: 'node_modules/evil', type: 'l', target: '/home' },
      ],
    );
    expect(changes.depsLinks).toBe(3);
    expect(changes.deleted).toEqual([]);
    expect(changes.added.map((file) => file.path)).toEqual([
      '/work/repo/node_modules/.cache',
      '/work/repo/node_modules/evil',
    ]);
  });

  it("the link's own .bin and @scope folders are the deps link too; what else is in them is listed", () => {
    const changes = compare(
      [],
      [
        { path: 'node_modules', type: 'd' },
        { path: 'node_modules/.bin', type: 'd' },
        { path: 'node_modules/.bin/semver', type: 'l', target: '/deps/src/node_modules/.bin/semver' },
        { path: 'node_modules/@isaacs', type: 'd' },
        {
          path: 'node_modules/@isaacs/string-locale-compare',
          type: 'l',
          target: '/.ca-sbx-image/deps/src/node_modules/@isaacs/string-locale-compare',
        },
        // Written in the box into the link's folders: listed.
        { path: 'node_modules/.bin/dropped', mode: '755' },
        { path: 'node_modules/@isaacs/evil', type: 'l', target: '/home' },
        // Only folders directly in a node_modules: these are the repo's (or the box's) own.
        { path: 'src', type: 'd' },
        { path: 'src/.bin', type: 'd' },
        { path: 'src/@scope', type: 'd' },
      ],
    );
    expect(changes.depsLinks).toBe(5);
    expect(changes.added.map((file) => file.path)).toEqual([
      '/work/repo/node_modules/.bin/dropped',
      '/work/repo/node_modules/@isaacs/evil',
      '/work/repo/src',
      '/work/repo/src/.bin',
      '/work/repo/src/@scope',
    ]);
    expect(changes.newExecutables.map((file) => file.path)).toEqual(['/work/repo/node_modules/.bin/dropped']);
  });

  it('a folder of the link already there at the clone: a structural change of it is listed, what was added to it not', () => {
    const changes = compare(
      [
        { path: 'node_modules', type: 'd' },
        { path: 'node_modules/.bin', type: 'd', mode: '755', mtime: '1.0' },
        { path: 'node_modules/@types', type: 'd', mode: '755' },
        { path: 'node_modules/a', type: 'l', target: '/deps/src/node_modules/a' },
      ],
      [
        { path: 'node_modules', type: 'd' },
        // Made world-writable in the box: listed.
        { path: 'node_modules/.bin', type: 'd', mode: '777', mtime: '2.0' },
        // An entry added (its mtime moves, nothing else): not listed.
        { path: 'node_modules/@types', type: 'd', mode: '755', mtime: '3.0' },
        // Pointed elsewhere in the deps: still the link's.
        { path: 'node_modules/a', type: 'l', target: '/.ca-sbx-image/deps/src/node_modules/a' },
      ],
    );
    expect(changes.modified.map((file) => [file.path, file.changed])).toEqual([
      ['/work/repo/node_modules/.bin', ['mode']],
    ]);
    expect(changes.added).toEqual([]);
  });

  it('keeps names byte-exact for the comparison and never trusts them for display', () => {
    // Two names that differ only in bytes that are not UTF-8: one must not stand for the other.
    const before = [{ path: Buffer.from([0x61, 0xff]) }];
    const now = [{ path: Buffer.from([0x61, 0xfe]) }];
    const changes = compare(before, now);
    expect(changes.added).toHaveLength(1);
    expect(changes.deleted).toHaveLength(1);
    expect(changes.added[0]?.path).toBe('/work/repo/a\ufffd');
    // A newline or escape in a name is data: one entry, its bytes kept.
    const hostile = compare([], [{ path: 'x\n/work/repo f 644 1 1 1\u001b[2J' }]);
    expect(hostile.added.map((file) => file.path)).toEqual(['/work/repo/x\n/work/repo f 644 1 1 1\u001b[2J']);
  });

  it('a record that does not parse is counted and the ones after it are still read (red team: touch -d @-5)', () => {
    const bad = Buffer.concat([
      listing([{ path: 'a' }]),
      Buffer.from('rm -rf f 644 1 1 1\0b\0\0'),
      listing([{ root: '/tmp', path: 'payload', mode: '4755' }]).subarray(
        '/work/repo d 755 4096 1.0 1.0\0\0\0'.length,
      ),
    ]);
    const parsed = parseListing(bad);
    expect([...parsed.entries.values()].map((entry) => `${entry.root}:${entry.key}`)).toEqual([
      'repo:a',
      'tmp:payload',
    ]);
    expect(parsed.malformed).toBe(1);
    // Times before 1970 or far ahead are find's own fields: read, and compared as text.
    const odd = compare(
      [{ path: 'package.json' }],
      [
        { path: 'package.json', mtime: '-5.0000000000', ctime: '99999999999999.0' },
        { root: '/tmp', path: 'zz', mtime: '99999999999999.0', mode: '4755' },
      ],
    );
    expect(odd.malformed).toBe(0);
    expect(odd.modified.map((file) => file.path)).toEqual(['/work/repo/package.json']);
    expect(odd.setuid.map((file) => file.path)).toEqual(['/tmp/zz']);
  });

  it('keeps a listing small and gives it back as it was: by root and path, in order, taken once', () => {
    const parsed = parseListing(
      listing([
        { path: 'a', size: 3 },
        { root: '/tmp', path: 'a', size: 5 },
        { path: 'dir', type: 'd', mode: '755' },
        { path: 'dir/link', type: 'l', target: '../a' },
        { path: Buffer.from([0x63, 0xe9]) },
      ]),
    );
    const { entries } = parsed;
    expect(entries.size).toBe(5);
    expect(entries.get('repo', 'a')).toMatchObject({ root: 'repo', size: 3 });
    expect(entries.get('tmp', 'a')).toMatchObject({ root: 'tmp', size: 5 });
    expect(entries.get('shm', 'a')).toBeUndefined();
    expect(entries.get('repo', 'dir/link')).toMatchObject({ type: 'symlink', target: '../a' });
    expect(entries.get('repo', 'c\u00e9')).toMatchObject({ key: 'c\u00e9' });
    // Taken: the same header and target are 'same'; another one gives the clone's entry; gone after.
    const same = entries.get('repo', 'a');
    expect(same && entries.take(same)).toBe('same');
    expect(entries.get('repo', 'a')).toBeUndefined();
    const moved = {
      ...(entries.get('repo', 'dir/link') as NonNullable<ReturnType<typeof entries.get>>),
      target: '/etc',
    };
    expect(entries.take(moved)).toMatchObject({ target: '../a' });
    expect(entries.size).toBe(3);
    expect([...entries.values()].map((entry) => `${entry.root}:${entry.key}`)).toEqual([
      'tmp:a',
      'repo:dir',
      'repo:c\u00e9',
    ]);
    // Growing past its first room keeps every record.
    const grown = new ListingEntries(0);
    readListing(listing(Array.from({ length: 5000 }, (_, i) => ({ path: `f${i}` }))), (entry) =>
      grown.set(entry),
    );
    expect(grown.size).toBe(5000);
    expect(grown.get('repo', 'f4999')).toMatchObject({ key: 'f4999' });
    expect([...grown.values()].at(-1)?.key).toBe('f4999');
  });

  it("the box's tmpfs as the frozen lister reaches them (/proc/1/root) read as /tmp and /dev/shm", () => {
    const parsed = parseListing(
      Buffer.from(
        '/proc/1/root/tmp f 755 3 1.0 1.0\0drop.sh\0\0/proc/1/root/dev/shm f 644 1 1.0 1.0\0x\0\0/proc/2/root/tmp f 644 1 1.0 1.0\0y\0\0',
      ),
    );
    expect([...parsed.entries.values()].map((entry) => `${entry.root}:${entry.key}`)).toEqual([
      'tmp:drop.sh',
      'shm:x',
    ]);
    // Any other root is not a record of ours.
    expect(parsed.malformed).toBe(1);
  });

  it('/dev/shm is listed outside the repo; a link that climbs out of /deps is no deps link', () => {
    const changes = compare(
      [{ path: 'src', type: 'd' }],
      [
        { path: 'src', type: 'd' },
        { root: '/dev/shm', path: 'drop' },
        { path: 'src/node_modules', type: 'd' },
        { path: 'src/node_modules/x', type: 'l', target: '/deps/../work/repo/.git/hooks' },
      ],
    );
    expect(changes.outsideRepo.map((file) => file.path)).toEqual(['/dev/shm/drop']);
    expect(changes.added.map((file) => file.path)).toEqual(['/work/repo/src/node_modules/x']);
    expect(changes.depsLinks).toBe(1);
  });
});

describe('clone facts', () => {
  it('reads the commit record: the sha and the signature kind, never verified', () => {
    const record = (text: string) =>
      Buffer.concat([Buffer.from(`${text}\0\0\0`), listing([{ path: 'a', size: 5 }])]);
    const signed = parseListing(record(`commit ${'a'.repeat(40)} SSH_SIGNATURE`));
    expect(signed.commit).toEqual({ sha: 'a'.repeat(40), signature: 'SSH_SIGNATURE' });
    expect(signed.entries.size).toBe(1);
    expect(cloneFacts(signed)).toMatchObject({
      commit: 'a'.repeat(40),
      signature: 'ssh',
      files: 1,
      bytes: 5,
    });
    expect(cloneFacts(parseListing(record(`commit ${'b'.repeat(64)} PGP_SIGNATURE`))).signature).toBe('pgp');
    expect(cloneFacts(parseListing(record(`commit ${'b'.repeat(40)} FOO`))).signature).toBe('other');
    const plain = cloneFacts(parseListing(record('commit - -')));
    expect(plain).toMatchObject({ commit: null, signature: 'none' });
    // Without the record (the box's listing) there is no commit.
    expect(parseListing(listing([{ path: 'a' }])).commit).toBeUndefined();
  });

  it("does not count the node_modules an early box linked beside the clone's listing", () => {
    const facts = cloneFacts(
      parseListing(
        listing([
          { path: 'index.js', size: 3 },
          { path: 'node_modules', type: 'd' },
          { path: 'node_modules/.bin', type: 'd' },
          {
            path: 'node_modules/.bin/tsc',
            type: 'l',
            target: '/.ca-sbx-image/deps/src/node_modules/.bin/tsc',
          },
          { path: 'node_modules/@types', type: 'd' },
          { path: 'node_modules/@types/node', type: 'l', target: '/deps/src/node_modules/@types/node' },
          // A link the source has itself is the source's.
          { path: 'latest', type: 'l', target: 'index.js' },
        ]),
      ),
    );
    expect(facts).toMatchObject({ files: 1, directories: 0, symlinks: 1, bytes: 3 });
  });

  it('counts outside .git, sizes .git apart, flags what a host tool runs but not the clone-made .git', () => {
    const facts = cloneFacts(
      parseListing(
        listing([
          { path: '.git', type: 'd' },
          { path: '.git/config', size: 90 },
          { path: '.git/hooks', type: 'd' },
          { path: '.git/hooks/pre-commit.sample', mode: '755', size: 10 },
          { path: '.envrc', size: 7 },
          { path: 'src', type: 'd' },
          { path: 'src/link', type: 'l', target: '../.envrc' },
        ]),
      ),
    );
    expect(facts).toMatchObject({ files: 1, directories: 1, symlinks: 1, bytes: 7, gitBytes: 100 });
    expect(facts.runs.map((file) => file.path)).toEqual(['/work/repo/.envrc']);
  });

  it('git samples are not hooks', () => {
    const changes = compare(
      [],
      [
        { path: '.git/hooks/pre-push.sample', mode: '755' },
        { path: '.git/hooks/pre-push', mode: '755' },
      ],
    );
    expect(changes.added.filter((file) => file.runs).map((file) => file.path)).toEqual([
      '/work/repo/.git/hooks/pre-push',
    ]);
  });
});

describe('the listing as it comes', () => {
  it('gives the same entries whatever the chunks (a record split across them waits for its end)', () => {
    const bytes = Buffer.concat([
      Buffer.from(`commit ${'c'.repeat(40)} -\0\0\0`),
      listing([{ path: 'a' }, { path: 'dir', type: 'd' }, { path: 'l', type: 'l', target: '/x' }]),
    ]);
    const whole = parseListing(bytes);
    for (const size of [1, 2, 7, 33]) {
      const seen: string[] = [];
      const reader = new ListingReader((entry) => seen.push(`${entry.root}:${entry.key}:${entry.target}`));
      for (let at = 0; at < bytes.length; at += size) reader.push(bytes.subarray(at, at + size));
      expect(reader.end()).toEqual({ malformed: 0, commit: whole.commit });
      expect(seen).toEqual(
        [...whole.entries.values()].map((entry) => `${entry.root}:${entry.key}:${entry.target}`),
      );
    }
    // Cut inside a record: counted once, the rest given.
    const cut = new ListingReader(() => undefined);
    cut.push(bytes.subarray(0, bytes.length - 5));
    expect(cut.end().malformed).toBe(1);
  });
});

describe('.gitattributes with drivers', () => {
  it('at the clone by content (the helper’s records), in changes by name', () => {
    const bytes = Buffer.concat([
      Buffer.from('attributes\0.gitattributes\0\0attributes\0we\nird/.gitattributes\0\0'),
      listing([
        { path: '.gitattributes' },
        { path: 'a', type: 'd' },
        { path: 'a/.gitattributes' },
        { path: 'we\nird', type: 'd' },
        { path: 'we\nird/.gitattributes' },
      ]),
    ]);
    const clone = parseListing(bytes);
    expect(clone.drivers).toEqual(['.gitattributes', 'we\nird/.gitattributes']);
    expect(clone.malformed).toBe(0);
    expect(cloneFacts(clone).runs.map((file) => file.path)).toEqual([
      '/work/repo/.gitattributes',
      '/work/repo/we\nird/.gitattributes',
    ]);
    const changes = compareListings(clone, listing([{ path: 'b', type: 'd' }, { path: 'b/.gitattributes' }]));
    expect(changes.added.map((file) => [file.path, file.runs])).toEqual([
      ['/work/repo/b', undefined],
      [
        '/work/repo/b/.gitattributes',
        'may select git filter, diff or merge drivers (git runs them from your own git config, e.g. git-lfs)',
      ],
    ]);
  });
});
