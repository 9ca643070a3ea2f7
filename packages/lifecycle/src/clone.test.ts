import { describe, expect, it } from 'vitest';
import { buildLocalCloneSteps, buildUrlCloneSteps, GIT_ENV, gitHardening } from './clone.js';

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
    expect(argv.slice(0, 5)).toEqual(['timeout', '-s', 'KILL', '600', 'git']);
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
