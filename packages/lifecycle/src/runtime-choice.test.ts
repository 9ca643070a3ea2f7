import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from './errors.js';
import { chooseRuntime } from './runtime-choice.js';

const NETWORKLESS = { runtimes: ['runc', 'runsc'], runtimeArgs: { runc: [], runsc: ['--network=none'] } };
const NETWORKED = { runtimes: ['runc', 'runsc'], runtimeArgs: { runc: [], runsc: [] } };
const NO_RUNSC = { runtimes: ['runc'], runtimeArgs: { runc: [] } };

const request = (over: Partial<Parameters<typeof chooseRuntime>[0]>) => ({
  runtime: 'runc' as const,
  runtimeGiven: false,
  policy: 'offline' as const,
  withClaude: false,
  ...over,
});

describe('chooseRuntime', () => {
  it('keeps runc by default, and a runtime the caller named', () => {
    expect(chooseRuntime(request({}), NETWORKED)).toEqual({ runtime: 'runc' });
    expect(chooseRuntime(request({ runtime: 'runsc', runtimeGiven: true }), NETWORKLESS)).toEqual({
      runtime: 'runsc',
    });
    expect(
      chooseRuntime(
        request({ runtime: 'runc', runtimeGiven: true, policy: 'allowlist', withClaude: true }),
        NETWORKED,
      ),
    ).toEqual({ runtime: 'runc' });
  });

  it('refuses runsc with an allowlist where runsc is registered with --network=none, saying why', () => {
    const refuse = () =>
      chooseRuntime(request({ runtime: 'runsc', runtimeGiven: true, policy: 'allowlist' }), NETWORKLESS);
    expect(refuse).toThrow(InvalidOptionsError);
    expect(refuse).toThrow(
      /^runtime runsc cannot run an allowlist box here: gVisor is registered with --network=none .*; use runtime runc/,
    );
    expect(
      chooseRuntime(request({ runtime: 'runsc', runtimeGiven: true, policy: 'allowlist' }), NETWORKED),
    ).toEqual({ runtime: 'runsc' });
  });

  it('--with-claude takes gVisor where it can run the allowlist box, else runc with a one-line reason', () => {
    const claude = request({ policy: 'allowlist', withClaude: true });
    expect(chooseRuntime(claude, NETWORKED)).toEqual({ runtime: 'runsc' });
    const networkless = chooseRuntime(claude, NETWORKLESS);
    expect(networkless.runtime).toBe('runc');
    expect(networkless.notice).toMatch(
      /^--with-claude: the box runs under runc, sharing the host kernel: gVisor is registered with --network=none/,
    );
    expect(networkless.notice).not.toMatch(/\n/);
    const missing = chooseRuntime(claude, NO_RUNSC);
    expect(missing).toEqual({
      runtime: 'runc',
      notice:
        '--with-claude: the box runs under runc, sharing the host kernel: gVisor (runsc) is not installed here',
    });
  });
});
