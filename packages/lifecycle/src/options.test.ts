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
      cloneNetwork: 'bridge',
      helperImage: 'ca-sbx-base:git',
    });
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
    [{ source: '.', name: 'Bad' }, /invalid sandbox name/],
    [{ source: '.', network: 'open' }, /unknown network policy/],
    [{ source: '.', network: 'allowlist' }, /at least one --allow/],
    [{ source: '.', allow: ['1.2.3.4'] }, /only for the allowlist/],
    [{ source: '.', network: 'allowlist', allow: ['1.2.3.4'], runtime: 'runsc' }, /network-less/],
    [{ source: '.', ref: '--upload-pack=x' }, /invalid ref/],
    [{ source: '.', memory: '1 gig' }, /^memory '1 gig' is not a number/],
    [{ source: '.', memory: '1k' }, /^memory 1k is below docker's minimum of 6 MiB$/],
    [{ source: '.', cpus: 0.001 }, /^cpus 0.001 is below docker's minimum of 0.01$/],
    [{ source: '.', pids: 1 }, /pids/],
    [{ source: '.', cloneNetwork: 'host;x' }, /cloneNetwork/],
  ])('refuses %j', (input, message) => {
    expect(() => resolveCreateOptions(input, {})).toThrow(message);
  });

  it('allowlist entries are normalised', () => {
    expect(resolveCreateOptions({ source: '.', network: 'allowlist', allow: ['1.2.3.4'] }, {}).allow).toEqual(
      ['1.2.3.4/32'],
    );
  });
});

describe('generateSandboxId', () => {
  it('is a valid id from the repo name', () => {
    expect(generateSandboxId('my-repo')).toMatch(/^my-repo-[0-9a-f]{6}$/);
    expect(generateSandboxId('x'.repeat(80))).toMatch(/^x{40}-[0-9a-f]{6}$/);
  });
});
