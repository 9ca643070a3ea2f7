import { describe, expect, it } from 'vitest';
import {
  buildLocalCloneSteps,
  buildUrlCloneSteps,
  forgetCredentials,
  GIT_ENV,
  gitHardening,
} from './clone.js';

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

  it('a shallow single-branch clone under a time limit, ending -- <url> <dir>', () => {
    const [step, ...rest] = buildUrlCloneSteps(source, undefined, 600);
    expect(rest).toEqual([]);
    const argv = step?.argv ?? [];
    expect(argv.slice(0, 5)).toEqual(['/usr/bin/timeout', '-s', 'KILL', '600', '/usr/bin/git']);
    expect(argv).toEqual(
      expect.arrayContaining(['clone', '--no-recurse-submodules', '--depth', '1', '--single-branch']),
    );
    expect(argv.slice(-3)).toEqual(['--', 'https://example.com/r.git', '/work/repo']);
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
    expect(steps.map((step) => Boolean(step.optional || step.fallback))).toEqual([false, false, false]);
    expect(steps[0]?.argv.slice(-2)).toEqual(['https://ghp_t0ken@example.com/r.git', '/work/repo']);
    const reset = steps[1]?.argv ?? [];
    expect(reset.slice(-4)).toEqual(['remote', 'set-url', 'origin', 'https://example.com/r.git']);
    expect(reset.slice(reset.indexOf('-C'), reset.indexOf('-C') + 2)).toEqual(['-C', '/work/repo']);
    expect(steps[2]?.argv).toEqual(['/bin/rm', '-f', '--', '/work/repo/.git/FETCH_HEAD']);
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

describe('buildLocalCloneSteps', () => {
  it('git clone --no-local of the staging dir, only the file protocol, origin dropped', () => {
    const steps = buildLocalCloneSteps(undefined, 600);
    const clone = steps[0]?.argv ?? [];
    expect(clone).toContain('--no-local');
    expect(clone.slice(-3)).toEqual(['--', '/tmp/src', '/work/repo']);
    expect(configOf(clone)).toContain('protocol.file.allow=always');
    expect(steps.at(-1)?.argv.slice(-3)).toEqual(['remote', 'remove', 'origin']);
  });
});
