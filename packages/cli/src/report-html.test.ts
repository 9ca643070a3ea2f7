import { describe, expect, it } from 'vitest';
import { typeLetter, whatHappened } from './report-html.js';

type Changes = Parameters<typeof whatHappened>[0];

const changes = (inImage: Changes['inImage']): Changes =>
  ({
    added: [],
    modified: [],
    deleted: [],
    outsideRepo: [],
    inImage,
    setuid: [],
    newExecutables: [],
  }) as unknown as Changes;

describe('whatHappened', () => {
  it('says a setuid file the box wrote in its view of its image was written in the deps, not at the clone', () => {
    const file = {
      path: '/.ca-sbx-image/deps/suid-sh',
      type: 'file',
      mode: '4755',
      size: 1,
    } as Changes['inImage'][number];
    expect(whatHappened(changes([file]), file)).toBe('written in the deps');
    expect(whatHappened(changes([]), { ...file, path: '/work/repo/suid-sh' })).toBe('at the clone already');
  });
});

describe('typeLetter', () => {
  it("is ls -l's letter, and ? for what is neither a file, a folder nor a link (a fifo, a whiteout)", () => {
    expect(['file', 'directory', 'symlink', 'other'].map((type) => typeLetter({ type }))).toEqual([
      '-',
      'd',
      'l',
      '?',
    ]);
  });
});
