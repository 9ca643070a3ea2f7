import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  buildLocalClonePlan,
  buildUrlClonePlan,
  type CloneStep,
  forgetCredentials,
  GIT_ENV,
  gitHardening,
  STEP_STDERR_TAIL_BYTES,
  stepsScript,
} from './clone-plan.js';

/** Every step of a plan, in the order they run (the measure sits between fetch and checkout). */
const buildUrlCloneSteps = (...args: Parameters<typeof buildUrlClonePlan>) => {
  const plan = buildUrlClonePlan(...args);
  return [...plan.fetch, ...plan.checkout];
};

const configOf = (argv: string[]) => argv.flatMap((arg, index) => (argv[index - 1] === '-c' ? [arg] : []));

describe('git hardening', () => {
  it('allows only the named protocol and turns off hooks, fsmonitor, bundle URIs, submodules', () => {
    const config = configOf(gitHardening('https'));
    expect(config).toEqual(
      expect.arrayContaining([
        'protocol.allow=never',
        'protocol.https.allow=always',
        'core.hooksPath=/dev/null',
        'core.fsmonitor=false',
        'transfer.bundleURI=false',
        'submodule.recurse=false',
      ]),
    );
    expect(config.filter((entry) => /^protocol\.[a-z]+\.allow=always$/.test(entry))).toEqual([
      'protocol.https.allow=always',
    ]);
  });

  it('the environment: no system/global config, no prompts, no LFS smudge', () => {
    expect(GIT_ENV).toMatchObject({
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_LFS_SKIP_SMUDGE: '1',
    });
    expect(GIT_ENV.GIT_SSH_COMMAND).toContain('BatchMode=yes');
  });
});

describe('buildUrlCloneSteps', () => {
  const source = { url: 'https://example.com/r.git', scheme: 'https' as const };

  it('a shallow single-branch clone without checkout under a time limit, ending -- <url> <dir>', () => {
    const plan = buildUrlClonePlan(source, undefined, 600);
    expect(plan.fetch).toHaveLength(1);
    const argv = plan.fetch[0]?.argv ?? [];
    expect(argv.slice(0, 5)).toEqual(['/usr/bin/timeout', '-s', 'KILL', '600', '/usr/bin/git']);
    expect(argv).toEqual(
      expect.arrayContaining([
        'clone',
        '--no-checkout',
        '--no-recurse-submodules',
        '--depth',
        '1',
        '--single-branch',
      ]),
    );
    expect(argv.slice(-3)).toEqual(['--', 'https://example.com/r.git', '/work/repo']);
    // The work tree is written only by the checkout step, after the measure of HEAD.
    expect(plan.revision).toBe('HEAD');
    expect(plan.checkout.map((step) => step.argv.slice(-3))).toEqual([['checkout', '--quiet', '--']]);
  });

  it('a branch goes through --branch before the --', () => {
    const argv = buildUrlCloneSteps(source, { ref: 'dev', commit: false }, 600)[0]?.argv ?? [];
    expect(argv.indexOf('--branch')).toBeLessThan(argv.indexOf('--'));
    expect(argv[argv.indexOf('--branch') + 1]).toBe('dev');
  });

  it('a commit sha is fetched by itself (full fetch as fallback) and checked out detached', () => {
    const sha = 'a'.repeat(40);
    const steps = buildUrlCloneSteps(source, { ref: sha, commit: true }, 600);
    expect(
      steps.map((step) => step.argv.find((arg) => ['init', 'remote', 'fetch', 'checkout'].includes(arg))),
    ).toEqual(['init', 'remote', 'fetch', 'fetch', 'checkout']);
    expect(steps[2]).toMatchObject({ optional: true });
    expect(steps[2]?.argv.slice(-3)).toEqual(['--', 'origin', sha]);
    expect(steps[3]).toMatchObject({ fallback: true });
    expect(steps[1]?.argv.slice(-2)).toEqual(['--', 'https://example.com/r.git']);
    for (const step of steps) expect(configOf(step.argv)).toContain('protocol.allow=never');
  });
});

describe('buildUrlCloneSteps with credentials in the URL', () => {
  const secret = { url: 'https://ghp_t0ken@example.com/r.git', scheme: 'https' as const };

  it('clones with the URL as given, then resets origin without the userinfo and drops FETCH_HEAD', () => {
    const steps = buildUrlCloneSteps(secret, undefined, 600);
    expect(steps.map((step) => Boolean(step.optional || step.fallback))).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(steps[0]?.argv.slice(-2)).toEqual(['https://ghp_t0ken@example.com/r.git', '/work/repo']);
    expect(steps[1]?.argv).toContain('checkout');
    const reset = steps[2]?.argv ?? [];
    expect(reset.slice(-4)).toEqual(['remote', 'set-url', 'origin', 'https://example.com/r.git']);
    expect(reset.slice(reset.indexOf('-C'), reset.indexOf('-C') + 2)).toEqual(['-C', '/work/repo']);
    expect(steps[3]?.argv).toEqual(['/bin/rm', '-f', '--', '/work/repo/.git/FETCH_HEAD']);
    for (const step of steps.slice(1)) expect(step.argv.join(' ')).not.toContain('ghp_t0ken');
  });

  it('user and password both go, after a commit checkout too', () => {
    const source = { url: 'http://me:s3cret@10.0.0.1:8080/r.git', scheme: 'http' as const };
    const steps = buildUrlCloneSteps(source, { ref: 'b'.repeat(40), commit: true }, 600);
    expect(steps.at(-3)?.argv).toContain('checkout');
    expect(steps.at(-2)?.argv.slice(-1)).toEqual(['http://10.0.0.1:8080/r.git']);
  });

  it('no extra steps without userinfo, nor for ssh (its user is a login name git needs)', () => {
    expect(forgetCredentials({ url: 'https://example.com/r.git', scheme: 'https' }, [])).toEqual([]);
    expect(forgetCredentials({ url: 'ssh://git@example.com/r.git', scheme: 'ssh' }, [])).toEqual([]);
    expect(forgetCredentials({ url: 'git@example.com:o/r.git', scheme: 'ssh' }, [])).toEqual([]);
  });
});

describe('buildLocalClonePlan', () => {
  it('git clone --no-local --no-checkout of the staging dir, only the file protocol, origin dropped', () => {
    const plan = buildLocalClonePlan(undefined, 600);
    const clone = plan.fetch[0]?.argv ?? [];
    expect(clone).toEqual(expect.arrayContaining(['--no-local', '--no-checkout']));
    expect(clone.slice(-3)).toEqual(['--', '/tmp/src', '/work/repo']);
    expect(configOf(clone)).toContain('protocol.file.allow=always');
    expect(plan.revision).toBe('HEAD');
    expect(plan.checkout[0]?.argv).toContain('checkout');
    expect(plan.checkout.at(-1)?.argv.slice(-3)).toEqual(['remote', 'remove', 'origin']);
    const named = buildLocalClonePlan(undefined, 600, 'https://github.com/org/repo.git');
    expect(named.checkout.at(-1)?.argv.slice(-4)).toEqual([
      'remote',
      'set-url',
      'origin',
      'https://github.com/org/repo.git',
    ]);
  });

  it('shallow (a partial clone): one commit over the pack protocol of a file:// URL', () => {
    const clone = buildLocalClonePlan(undefined, 600, undefined, true).fetch[0]?.argv ?? [];
    expect(clone).toEqual(expect.arrayContaining(['--no-local', '--depth', '1']));
    expect(clone.slice(-3)).toEqual(['--', 'file:///tmp/src', '/work/repo']);
  });

  it('a commit is measured and checked out detached', () => {
    const sha = 'c'.repeat(40);
    const plan = buildLocalClonePlan({ ref: sha, commit: true }, 600);
    expect(plan.revision).toBe(sha);
    expect(plan.checkout[0]?.argv.slice(-4)).toEqual(['--quiet', '--detach', sha, '--']);
  });
});

describe('stepsScript (the clone steps of one exec)', () => {
  // The script is plain POSIX sh; run here with /bin/sh as in the helper.
  const runSteps = (steps: CloneStep[]) => {
    const result = spawnSync('/bin/sh', ['-c', stepsScript(steps), 'ca-sbx-steps'], { encoding: 'utf8' });
    const lines = result.stdout.split('\n').filter((line) => line !== '');
    return { mark: lines.at(-1), out: lines.slice(0, -1), stderr: result.stderr };
  };

  it('passes every argument literally: quotes, $(…), backticks and newlines are never interpreted', () => {
    const hostile = ["it's", '$(echo injected)', '`echo injected`', 'a\nb', '"; exit 3; "', '\\'];
    const { mark, out } = runSteps([{ argv: ['/usr/bin/printf', '%s|', ...hostile], result: true }]);
    expect(mark).toBe('ca-sbx-steps 0');
    expect(out.join('\n')).toBe(`${hostile.join('|')}|`);
  });

  it('stops at the first failed step, names it and keeps its stderr', () => {
    const { mark, stderr } = runSteps([
      { argv: ['/bin/true'] },
      { argv: ['/bin/sh', '-c', 'echo "fatal: no such ref" >&2; exit 128'] },
      { argv: ['/usr/bin/printf', 'never'], result: true },
    ]);
    expect(mark).toBe('ca-sbx-steps failed 1 128');
    expect(stderr).toContain('fatal: no such ref');
  });

  it("hands back only the end of a failed step's stderr: git's fatal line, not a flood before it", () => {
    const flood = `head -c ${4 * STEP_STDERR_TAIL_BYTES} /dev/zero | tr '\\0' r >&2; echo "fatal: the end" >&2; exit 128`;
    const { mark, stderr } = runSteps([{ argv: ['/bin/sh', '-c', flood] }]);
    expect(mark).toBe('ca-sbx-steps failed 0 128');
    expect(stderr.length).toBeLessThanOrEqual(STEP_STDERR_TAIL_BYTES);
    expect(stderr.trimEnd().endsWith('fatal: the end')).toBe(true);
  });

  it('runs a fallback only after its optional step failed, and reports the last exit code', () => {
    const fallback = runSteps([
      { argv: ['/bin/false'], optional: true },
      { argv: ['/usr/bin/printf', 'fallback\n'], fallback: true, result: true },
    ]);
    expect(fallback).toMatchObject({ mark: 'ca-sbx-steps 0', out: ['fallback'] });
    const skipped = runSteps([
      { argv: ['/bin/true'], optional: true },
      { argv: ['/usr/bin/printf', 'fallback\n'], fallback: true, result: true },
      { argv: ['/bin/sh', '-c', 'exit 3'], optional: true },
    ]);
    expect(skipped).toMatchObject({ mark: 'ca-sbx-steps 3', out: [] });
  });

  it('runs a gated step only after a result whose verdict it names, and keeps that result as the code', () => {
    const verdict = (line: string): CloneStep => ({
      argv: ['/bin/sh', '-c', `printf '%s\\n' "$0"; exit 0`, line],
      optional: true,
      result: true,
    });
    const dir = mkdtempSync(join(tmpdir(), 'ca-steps-'));
    const write: CloneStep = { argv: ['/usr/bin/touch', 'written'], cwd: dir, whenVerdict: ['ok'] };
    const config: CloneStep = {
      argv: ['/usr/bin/touch', 'config'],
      cwd: dir,
      whenVerdict: ['ok', 'missing'],
    };
    const ran = () => ['written', 'config'].filter((file) => existsSync(join(dir, file)));
    try {
      expect(runSteps([verdict('ok 3 120'), write, config])).toMatchObject({
        mark: 'ca-sbx-steps 0',
        out: ['ok 3 120'],
      });
      expect(ran()).toEqual(['written', 'config']);
      for (const file of ran()) rmSync(join(dir, file));
      runSteps([verdict('missing'), write, config]);
      expect(ran()).toEqual(['config']);
      rmSync(join(dir, 'config'));
      // A cap crossed, a forged verdict word, a word that only starts like one: nothing runs.
      for (const line of ['bytes 9 99999', 'entries 7 1', 'okay 1 1', ' ok 1 1', 'failed 128'])
        expect(runSteps([verdict(line), write, config]).mark).toBe('ca-sbx-steps 0');
      expect(ran()).toEqual([]);
      // The word counts only from a measure that exited 0 (the host's rule, checkoutVerdict).
      const failedMeasure: CloneStep = {
        ...verdict('ok 3 120'),
        argv: ['/bin/sh', '-c', 'echo ok 3 120; exit 3'],
      };
      expect(runSteps([failedMeasure, write, config]).mark).toBe('ca-sbx-steps 3');
      expect(ran()).toEqual([]);
      // A gated step that fails ends the batch and is named, as any step.
      const failing = {
        argv: ['/bin/sh', '-c', 'echo "fatal: checkout" >&2; exit 128'],
        whenVerdict: ['ok'] as const,
      };
      const failed = runSteps([verdict('ok 1 1'), failing, config]);
      expect(failed.mark).toBe('ca-sbx-steps failed 1 128');
      expect(failed.stderr).toContain('fatal: checkout');
      expect(ran()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives stdin only to the step that reads the input, and runs each step in its directory', () => {
    const result = spawnSync(
      '/bin/sh',
      [
        '-c',
        stepsScript([
          { argv: ['/bin/cat'], result: true },
          { argv: ['/bin/cat'], input: true, result: true },
          { argv: ['/bin/pwd'], cwd: '/usr', result: true },
        ]),
        'ca-sbx-steps',
      ],
      { encoding: 'utf8', input: 'the tar\n' },
    );
    expect(result.stdout.split('\n').filter(Boolean)).toEqual(['the tar', '/usr', 'ca-sbx-steps 0']);
  });
});
