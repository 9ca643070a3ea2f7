import { describe, expect, it } from 'vitest';
import { CloneFailedError } from '../errors.js';
import { withShortShaHint } from './clone.js';

const unknownBranch = new CloneFailedError(
  'git clone failed in the helper: fatal: Remote branch 7106ce60 not found in upstream origin',
  { hint: 'the old hint' },
);

describe('withShortShaHint', () => {
  it('an abbreviated commit that git could not find as a ref: says what --ref wants', () => {
    const said = withShortShaHint(unknownBranch, { ref: '7106ce60', commit: false });
    expect(said.message).toContain(
      '(--ref 7106ce60 looks like an abbreviated commit: a commit is named by its full sha)',
    );
    expect(said.hint).toMatch(/^give the full sha: `git rev-parse 7106ce60`/);
    const fetched = new CloneFailedError(
      "git fetch failed in the helper: fatal: couldn't find remote ref 1234567",
    );
    expect(withShortShaHint(fetched, { ref: '1234567', commit: false }).hint).toMatch(/^give the full sha/);
  });

  it('any other failure of a hex-looking ref (a real tag `20240115`) stays as it was', () => {
    const network = new CloneFailedError('git fetch failed in the helper: fatal: unable to access', {
      hint: 'h',
    });
    expect(withShortShaHint(network, { ref: '20240115', commit: false })).toBe(network);
    expect(withShortShaHint(unknownBranch, { ref: 'main', commit: false })).toBe(unknownBranch);
    expect(withShortShaHint(unknownBranch, { ref: 'a'.repeat(40), commit: true })).toBe(unknownBranch);
    expect(withShortShaHint(unknownBranch, undefined)).toBe(unknownBranch);
  });
});
