import { CA_BUNDLE_PATH, CA_TRUST_ENV, EXTRA_CA_PATH } from '@ca-sandbox/build';
import type { EgressGateway } from '@ca-sandbox/run';
import { describe, expect, it } from 'vitest';
import { BOX_NO_PROXY, boxEnv, NODE_ENV_PROXY, nodeReadsEnvProxy } from './box-env.js';

const gateway = { proxyUrl: 'http://ca-sbx_gw-x:3128' } as EgressGateway;
const ca = 'f'.repeat(64);
const node = { node: '22.23.5', npm: '10.9.4' };

describe('boxEnv', () => {
  it('an offline or clone-then-cut box gets nothing, whatever its image trusts', () => {
    expect(boxEnv({ reachesNetwork: false, toolchain: node, trustedCa: ca })).toEqual({});
    expect(boxEnv({ reachesNetwork: false, toolchain: node, trustedCa: '' })).toEqual({});
  });

  it('a box behind its gateway: the proxy, its loopback kept local, node fetch through it, the CA bundle', () => {
    const env = boxEnv({ gateway, reachesNetwork: true, toolchain: node, trustedCa: ca });
    expect(env).toMatchObject({
      HTTPS_PROXY: gateway.proxyUrl,
      https_proxy: gateway.proxyUrl,
      HTTP_PROXY: gateway.proxyUrl,
      NO_PROXY: BOX_NO_PROXY,
      no_proxy: BOX_NO_PROXY,
      NODE_USE_ENV_PROXY: '1',
      NODE_OPTIONS: '--disable-warning=UNDICI-EHPA',
      NODE_EXTRA_CA_CERTS: EXTRA_CA_PATH,
      SSL_CERT_FILE: CA_BUNDLE_PATH,
      CURL_CA_BUNDLE: CA_BUNDLE_PATH,
      GIT_SSL_CAINFO: CA_BUNDLE_PATH,
      REQUESTS_CA_BUNDLE: CA_BUNDLE_PATH,
      PIP_CERT: CA_BUNDLE_PATH,
    });
    expect(BOX_NO_PROXY.split(',')).toEqual(['localhost', '127.0.0.1', '::1']);
  });

  it('no CA variable for an image built without a bundle; no node proxy switch for a node that ignores it', () => {
    const env = boxEnv({ gateway, reachesNetwork: true, toolchain: { node: '18.19.0' }, trustedCa: '' });
    for (const name of [...Object.keys(CA_TRUST_ENV), ...Object.keys(NODE_ENV_PROXY)])
      expect(env).not.toHaveProperty(name);
    expect(env.HTTPS_PROXY).toBe(gateway.proxyUrl);
    expect(
      boxEnv({ gateway, reachesNetwork: true, toolchain: { python3: '3.11.2' }, trustedCa: '' }),
    ).not.toHaveProperty('NODE_OPTIONS');
  });

  it('an allowlist of addresses (no gateway): the CA bundle, no proxy variable', () => {
    const env = boxEnv({ reachesNetwork: true, toolchain: node, trustedCa: ca });
    expect(env).toEqual(CA_TRUST_ENV);
  });
});

describe('nodeReadsEnvProxy', () => {
  it('22.21+, 24.5+ and 25+ read NODE_USE_ENV_PROXY; older ones and non-versions do not', () => {
    for (const version of ['22.21.0', '22.23.5', '24.5.0', '25.0.1', '26.1.0'])
      expect(nodeReadsEnvProxy(version)).toBe(true);
    for (const version of ['18.19.0', '20.19.0', '22.20.9', '23.11.0', '24.4.1', '', 'x', undefined])
      expect(nodeReadsEnvProxy(version)).toBe(false);
  });
});
