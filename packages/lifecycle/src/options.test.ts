import { describe, expect, it } from 'vitest';
import { generateSandboxId, resolveCreateOptions } from './options.js';

describe('resolveCreateOptions', () => {
  it('fills the defaults', () => {
    expect(resolveCreateOptions({ source: '.' }, {})).toMatchObject({
      id: '',
      policy: 'offline',
      allow: [],
      builder: 'auto',
      runtime: 'runc',
      memory: '2g',
      cpus: 2,
      pids: 512,
      chosen: { memory: false, cpus: false },
      helperImage: 'ca-sbx-base:git',
    });
    // No clone network: a URL clone goes through the egress gateway.
    expect(resolveCreateOptions({ source: '.' }, {}).cloneNetwork).toBeUndefined();
  });

  it('reads the helper image from CA_SANDBOX_HELPER_IMAGE', () => {
    expect(
      resolveCreateOptions({ source: '.' }, { CA_SANDBOX_HELPER_IMAGE: 'my/helper:1' }).helperImage,
    ).toBe('my/helper:1');
    expect(() =>
      resolveCreateOptions({ source: '.' }, { CA_SANDBOX_HELPER_IMAGE: '--privileged' }),
    ).toThrow();
  });

  it.each([
    [{ source: '.', privileged: true }, /unknown option/],
    [{ source: '.', name: 'Bad' }, /invalid sandbox id/],
    [{ source: '.', network: 'open' }, /unknown network policy/],
    [{ source: '.', network: 'allowlist' }, /at least one --allow/],
    [{ source: '.', allow: ['1.2.3.4'] }, /only for the allowlist/],
    [{ source: '.', withClaude: true, network: 'offline' }, /cannot be combined with --network offline$/],
    [
      { source: '.', withClaude: true, network: 'clone-then-cut' },
      /allowlist policy with api\.anthropic\.com:443 only/,
    ],
    [{ source: '.', withClaude: true, allow: ['example.com'] }, /--allow cannot widen/],
    [
      { source: '.', withClaude: true, network: 'allowlist', allow: ['*.anthropic.com'] },
      /--allow cannot widen/,
    ],
    [{ source: '.', network: 'allowlist', allow: ['exa mple.com'] }, /invalid egress destination/],
    [{ source: '.', ref: '--upload-pack=x' }, /invalid ref/],
    [{ source: '.', memory: '1 gig' }, /^memory '1 gig' is not a number/],
    [{ source: '.', memory: '1k' }, /^memory 1k is below docker's minimum of 6 MiB$/],
    [{ source: '.', cpus: 0.001 }, /^cpus 0.001 is below docker's minimum of 0.01$/],
    [{ source: '.', pids: 1 }, /pids/],
    [{ source: '.', cloneNetwork: 'host;x' }, /cloneNetwork/],
  ])('refuses %j', (input, message) => {
    expect(() => resolveCreateOptions(input, {})).toThrow(message);
  });

  it('withClaude is the allowlist of api.anthropic.com:443 through the gateway, runtime left to preflight', () => {
    for (const input of [
      { source: '.', withClaude: true },
      { source: '.', withClaude: true, network: 'allowlist' },
    ]) {
      expect(resolveCreateOptions(input, {})).toMatchObject({
        withClaude: true,
        policy: 'allowlist',
        allowVia: 'gateway',
        allow: [],
        allowRules: [{ kind: 'domain', domain: 'api.anthropic.com', subdomains: false, ports: [443] }],
        runtime: 'runc',
        runtimeGiven: false,
      });
    }
    expect(resolveCreateOptions({ source: '.', withClaude: true, runtime: 'runsc' }, {})).toMatchObject({
      runtime: 'runsc',
      runtimeGiven: true,
    });
    expect(resolveCreateOptions({ source: '.' }, {})).toMatchObject({
      withClaude: false,
      runtimeGiven: false,
    });
  });

  it('allowlist entries are normalised: addresses only go to the firewall, any domain or port to the gateway', () => {
    const firewall = resolveCreateOptions({ source: '.', network: 'allowlist', allow: ['1.2.3.4'] }, {});
    expect(firewall).toMatchObject({ allowVia: 'firewall', allow: ['1.2.3.4/32'], allowRules: [] });
    const gateway = resolveCreateOptions(
      { source: '.', network: 'allowlist', allow: ['*.example.com', '1.2.3.4', '10.0.0.0/8:8443'] },
      {},
    );
    expect(gateway).toMatchObject({ allowVia: 'gateway', allow: [] });
    expect(gateway.allowRules).toEqual([
      { kind: 'domain', domain: 'example.com', subdomains: true, ports: [443, 80] },
      { kind: 'cidr', cidr: '1.2.3.4/32', ports: [443, 80] },
      { kind: 'cidr', cidr: '10.0.0.0/8', ports: [8443] },
    ]);
  });
});

describe('generateSandboxId', () => {
  it('is a valid id from the repo name', () => {
    expect(generateSandboxId('my-repo')).toMatch(/^my-repo-[0-9a-f]{6}$/);
    expect(generateSandboxId('x'.repeat(80))).toMatch(/^x{40}-[0-9a-f]{6}$/);
  });
});
