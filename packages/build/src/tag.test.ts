import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { imageTag, MAX_REPO_PART, sanitiseRepoName, sourceKey } from './tag.js';

// docker's reference grammar for `repository:tag`.
const TAG = /^ca-sbx:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

describe('imageTag / sanitiseRepoName', () => {
  it('keeps a clean name as it is, between the source key and the dephash', () => {
    const key = sourceKey('https://example.com/o/my-repo.git');
    expect(key).toMatch(/^[0-9a-f]{16}$/);
    expect(imageTag('my-repo', 'abc123', 'https://example.com/o/my-repo.git')).toBe(
      `ca-sbx:my-repo-${key}-abc123`,
    );
  });

  it('two sources with the same name and dephash never share a tag', () => {
    expect(imageTag('proj', 'abc', '/home/a/proj')).not.toBe(imageTag('proj', 'abc', '/home/b/proj'));
    expect(imageTag('proj', 'abc', 'https://a.example/proj')).not.toBe(
      imageTag('proj', 'abc', 'https://b.example/proj'),
    );
  });

  it('sanitises and tags odd names with a hash of the raw name', () => {
    expect(sanitiseRepoName('Foo/Bar Baz')).toMatch(/^foo-bar-baz-[0-9a-f]{8}$/);
    expect(sanitiseRepoName('')).toMatch(/^repo-[0-9a-f]{8}$/);
    expect(sanitiseRepoName('../..')).toMatch(/^repo-[0-9a-f]{8}$/);
    expect(sanitiseRepoName('-rm\n-rf')).toMatch(/^rm-rf-[0-9a-f]{8}$/);
  });

  it('never collides for names that sanitise alike', () => {
    const names = [
      'foo',
      'Foo',
      'FOO',
      'f/oo',
      'f-oo',
      'f--oo',
      'f oo',
      'f.oo',
      `${'a'.repeat(100)}1`,
      `${'a'.repeat(100)}2`,
    ];
    const tags = new Set(names.map(sanitiseRepoName));
    expect(tags.size).toBe(names.length);
  });

  it('always yields a valid, bounded docker tag', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 300, unit: 'binary' }),
        fc.stringMatching(/^[0-9a-f]{24}$/),
        fc.string({ maxLength: 300 }),
        (raw, hash, source) => {
          const tag = imageTag(raw, hash, source);
          expect(tag).toMatch(TAG);
          expect(sanitiseRepoName(raw).length).toBeLessThanOrEqual(MAX_REPO_PART);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('maps different raw names to different repo parts', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), fc.string({ maxLength: 80 }), (a, b) => {
        fc.pre(a !== b);
        expect(sanitiseRepoName(a)).not.toBe(sanitiseRepoName(b));
      }),
      { numRuns: 500 },
    );
  });
});
