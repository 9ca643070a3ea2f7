import { describe, expect, it } from 'vitest';
import { installRegistry, untrustedRegistryNotice } from './registry-trust.js';

describe('installRegistry', () => {
  it('the public registry of each provider, https only', () => {
    expect(installRegistry('node', {})?.host).toBe('registry.npmjs.org');
    expect(installRegistry('python', {})?.host).toBe('pypi.org');
    expect(installRegistry('go', {})?.host).toBe('proxy.golang.org');
    expect(installRegistry('rust', {})?.host).toBe('crates.io');
    expect(installRegistry('plain', {})).toBeUndefined();
  });

  it("the provider's mirror instead; an http mirror has no certificate to check", () => {
    expect(installRegistry('node', { npm: 'https://npm.corp.example:8443/' })?.host).toBe(
      'npm.corp.example:8443',
    );
    expect(installRegistry('node', { npm: 'http://10.0.0.5:4873/' })).toBeUndefined();
    expect(installRegistry('python', { pip: 'https://pypi.corp.example/simple' })?.hostname).toBe(
      'pypi.corp.example',
    );
  });

  it("GOPROXY's first URL; a list of keywords only has none", () => {
    expect(installRegistry('go', { go: 'https://goproxy.corp.example,direct' })?.host).toBe(
      'goproxy.corp.example',
    );
    expect(installRegistry('go', { go: 'off' })).toBeUndefined();
    expect(installRegistry('go', { go: 'direct|https://goproxy.corp.example' })?.host).toBe(
      'goproxy.corp.example',
    );
  });
});

describe('untrustedRegistryNotice', () => {
  it('names the setting and its variable when no bundle is trusted', () => {
    const line = untrustedRegistryNotice(
      'registry.npmjs.org',
      'self-signed certificate in certificate chain',
      undefined,
    );
    expect(line).toContain('registry.npmjs.org presents a certificate the install does not trust');
    expect(line).toContain('caCertificates in the configuration file');
    expect(line).toContain('CA_SANDBOX_CA_CERTS');
  });

  it('an IPv6 mirror keeps its brackets in the host it names', () => {
    expect(installRegistry('node', { npm: 'https://[fd00::5]:8443/' })?.hostname).toBe('[fd00::5]');
  });

  it('says the bundle may be the wrong one when one is trusted', () => {
    expect(
      untrustedRegistryNotice('registry.npmjs.org', 'unable to get local issuer certificate', '/etc/ca.pem'),
    ).toContain('the bundle of caCertificates (/etc/ca.pem) may lack the CA that signed it');
  });
});
