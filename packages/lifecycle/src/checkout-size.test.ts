import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECKOUT_ATTRIBUTES, checkoutVerdict, measureStep } from './checkout-size.js';
import { CheckoutTooLargeError, CloneFailedError } from './errors.js';

const limits = { maxBytes: 512 * 1024 * 1024, maxEntries: 200_000 };

describe('checkoutVerdict', () => {
  it('under both caps: the size of the checkout', () => {
    expect(checkoutVerdict('ok 12 3456 0\n', 0, '', 'HEAD', limits)).toEqual({
      entries: 12,
      bytes: 3456,
      empty: false,
      submodules: { count: 0, named: [] },
    });
  });

  it('counts the gitlinks (submodules the box will not get) and names the first, sanitised', () => {
    const stdout = 'submodule tests/suite\nsubmodule "evil\\033[2J"\nsubmodule vendor/x\nok 40 100 5\n';
    expect(checkoutVerdict(stdout, 0, '', 'HEAD', limits).submodules).toEqual({
      count: 5,
      named: ['tests/suite', '"evil\\033[2J"', 'vendor/x'],
    });
    // A control character git would have quoted still never reaches a terminal.
    const raw = checkoutVerdict('submodule a\u001b[2Jb\nok 2 0 1\n', 0, '', 'HEAD', limits);
    expect(raw.submodules.named[0]).not.toContain('\u001b');
  });

  it('over the byte cap: a usage error naming the cap, with its own code', () => {
    const error = (() => {
      try {
        checkoutVerdict('bytes 513 537919488\n', 0, '', 'HEAD', limits);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(CheckoutTooLargeError);
    expect(error).toMatchObject({ code: 'CHECKOUT_TOO_LARGE', kind: 'usage', cap: 'bytes' });
    expect((error as Error).message).toContain('--max-source-bytes 512 MiB');
    expect((error as Error).message).not.toContain('\n');
  });

  it('over the entry cap', () => {
    expect(() => checkoutVerdict('entries 200001 0\n', 0, '', 'HEAD', limits)).toThrow(
      /more than 200000 entries.*--max-source-entries 200000/,
    );
  });

  it('an empty repository has nothing to check out; a missing commit is a clone failure', () => {
    expect(checkoutVerdict('missing\n', 0, '', 'HEAD', limits)).toEqual({
      entries: 0,
      bytes: 0,
      empty: true,
      submodules: { count: 0, named: [] },
    });
    expect(() => checkoutVerdict('missing\n', 0, '', 'a'.repeat(40), limits)).toThrow(CloneFailedError);
  });

  it('git failing or being killed is a clone failure, never a pass', () => {
    expect(() => checkoutVerdict('failed 128\n', 0, 'fatal: bad tree\n', 'HEAD', limits)).toThrow(
      /measuring the checkout failed in the helper: fatal: bad tree/,
    );
    expect(() => checkoutVerdict('failed 137\n', 0, '', 'HEAD', limits)).toThrow(/time limit/);
    expect(() => checkoutVerdict('', 1, 'Error: No such container', 'HEAD', limits)).toThrow(
      CloneFailedError,
    );
  });
});

describe('measureStep', () => {
  it('runs in /work/repo with the hardened git, caps and revision as arguments, its verdict kept', () => {
    // The step runs in the clone's exec, as the box user (runCloneSteps: BOX_USER, from /tmp).
    const step = measureStep('HEAD', limits, 600);
    expect(step).toMatchObject({ cwd: '/work/repo', optional: true, result: true });
    const argv = step.argv;
    const script = argv[argv.indexOf('-c') + 1] ?? '';
    expect(argv[argv.indexOf('-c') - 1]).toBe('/bin/sh');
    expect(script).toContain(CHECKOUT_ATTRIBUTES);
    expect(script).toContain('ls-tree -r -t -l');
    const rest = argv.slice(argv.indexOf('-c') + 2);
    expect(rest.slice(0, 4)).toEqual(['ca-sbx-measure', '200000', String(512 * 1024 * 1024), 'HEAD']);
    expect(rest.slice(4, 9)).toEqual(['/usr/bin/timeout', '-s', 'KILL', '600', '/usr/bin/git']);
    expect(rest).toContain('protocol.allow=never');
  });
});

describe('the measure script itself (host sh, git and awk over a repo of our own)', () => {
  it('counts every gitlink and prints at most three paths, each cut to 300 characters', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ca-measure-'));
    try {
      const git = (...args: string[]) =>
        execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], {
          cwd: dir,
        });
      git('init', '-q', '-b', 'main');
      writeFileSync(join(dir, 'f'), 'x\n');
      git('add', 'f');
      // A gitlink names a commit of another repository: git never looks for it here.
      const commit = 'a'.repeat(40);
      // A path git allows, far longer than anything shown: nested folders of long names (first
      // in git's order: upper case sorts before 'a').
      const deep = Array.from({ length: 8 }, (_, i) => `${'D'.repeat(200)}${i}`).join('/');
      for (const path of [`${deep}/sub`, 'a', 'b', 'c'])
        git('update-index', '--add', '--cacheinfo', `160000,${commit},${path}`);
      git('commit', '-qm', 'gitlinks');
      const argv = measureStep('HEAD', limits, 60).argv;
      const out = execFileSync(argv[0] ?? '', argv.slice(1), { cwd: dir }).toString();
      const lines = out.trim().split('\n');
      expect(lines.at(-1)).toMatch(/^ok 1[0-9] 2 4$/);
      const named = lines.filter((line) => line.startsWith('submodule '));
      expect(named).toHaveLength(3);
      expect(Math.max(...named.map((line) => line.length))).toBe('submodule '.length + 300);
      expect(checkoutVerdict(out, 0, '', 'HEAD', limits).submodules.count).toBe(4);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
