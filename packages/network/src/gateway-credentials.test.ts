import { describe, expect, it } from 'vitest';
import { parseEgressRules } from './egress-rules.js';
import {
  CREDENTIALS_CONF_PATH,
  checkCredentialTargets,
  checkCredentialValue,
  credentialHeader,
  parseGatewayHostPins,
  renderCredentialSecrets,
  renderGatewayHosts,
} from './gateway-credentials.js';
import { parseGatewayLog, renderSquidConfig } from './squid-config.js';

describe('credential headers and values', () => {
  it('takes ordinary header names, lower-cased', () => {
    expect(credentialHeader('X-Api-Key')).toBe('x-api-key');
    expect(credentialHeader('authorization')).toBe('authorization');
  });

  it.each([
    'Host',
    'content-length',
    'Transfer-Encoding',
    'proxy-authorization',
    'proxy-anything',
    'x api',
    'a\r\nb',
    '',
  ])('refuses %j', (name) => {
    expect(() => credentialHeader(name)).toThrow(/invalid credential/);
  });

  it('refuses values squid could not quote, without showing them', () => {
    for (const value of [
      '',
      '   ',
      'a"b',
      'a\\b',
      'line\nbreak',
      'tab\tin',
      'é',
      'x'.repeat(4097),
      '%'.repeat(2049),
      'a${service_name}b',
    ]) {
      let message = '';
      try {
        checkCredentialValue('api.example.com', value);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^invalid credential 'api\.example\.com': /);
      if (value.trim()) expect(message).not.toContain(value);
    }
    expect(() => checkCredentialValue('api.example.com', 'Bearer sk-abc_123.%x')).not.toThrow();
  });

  it('escapes % in the values file and adds on HTTPS only, never TRACE', () => {
    const text = renderCredentialSecrets([
      { domain: 'api.example.com', header: 'authorization', value: 'Bearer 50%off' },
      { domain: 'registry.example.com', header: 'x-token', value: 'raw' },
    ]);
    expect(text).toBe(
      [
        'request_header_add authorization "Bearer 50%%off" credential0 credential_https !credential_trace',
        'request_header_add x-token "raw" credential1 credential_https !credential_trace',
        '',
      ].join('\n'),
    );
  });
});

describe('checkCredentialTargets', () => {
  const rules = parseEgressRules(['api.example.com:443', '*.corp.example', '203.0.113.7']);

  it('takes a domain an allow rule covers (a wildcard covers its subdomains)', () => {
    expect(() =>
      checkCredentialTargets(
        [
          { domain: 'api.example.com', header: 'authorization' },
          { domain: 'npm.corp.example', header: 'authorization' },
          { domain: 'api.example.com', header: 'x-api-key' },
        ],
        rules,
      ),
    ).not.toThrow();
  });

  it('refuses a domain no rule names, and a second credential for one header', () => {
    expect(() =>
      checkCredentialTargets([{ domain: 'evil.example', header: 'authorization' }], rules),
    ).toThrow(/not on the allowlist/);
    expect(() => checkCredentialTargets([{ domain: 'example.com', header: 'authorization' }], rules)).toThrow(
      /not on the allowlist/,
    );
    expect(() =>
      checkCredentialTargets(
        [
          { domain: 'api.example.com', header: 'authorization' },
          { domain: 'api.example.com', header: 'authorization' },
        ],
        rules,
      ),
    ).toThrow(/a second credential/);
  });
});

describe('the configuration of a gateway with credentials', () => {
  const config = renderSquidConfig({
    rules: parseEgressRules(['api.example.com:443', 'registry.npmjs.org']),
    blocked: ['10.0.0.0/8'],
    credentials: [{ domain: 'api.example.com', header: 'x-api-key' }],
  });
  const lines = config.split('\n');

  it('terminates TLS for the credential domains only, with the static leaf of its own CA', () => {
    expect(lines[0]).toMatch(
      /^http_port 3128 ssl-bump tls-cert=\S+ tls-key=\S+ generate-host-certificates=off$/,
    );
    expect(lines).toContain('acl credential_names dstdomain -n api.example.com');
    expect(lines.indexOf('ssl_bump bump credential_names')).toBeLessThan(
      lines.indexOf('ssl_bump splice all'),
    );
    expect(lines).toContain('reply_header_access X-Cache deny all');
  });

  it("strips the box's own header there, logs which request got one, refuses TRACE, includes the values last", () => {
    expect(lines).toContain('request_header_access x-api-key deny credential0');
    expect(lines).toContain('note credential api.example.com credential0 credential_https !credential_trace');
    expect(lines.find((line) => line.startsWith('logformat'))).toMatch(/ %\{credential\}note$/);
    const trace = lines.indexOf('http_access deny credential_names credential_trace');
    expect(trace).toBeGreaterThan(-1);
    expect(trace).toBeLessThan(lines.findIndex((line) => line.startsWith('http_access allow')));
    expect(lines.filter(Boolean).at(-1)).toBe(`include ${CREDENTIALS_CONF_PATH}`);
  });

  it('holds no value, and a gateway without credentials is as before', () => {
    const plain = renderSquidConfig({ rules: parseEgressRules(['example.com']), blocked: ['10.0.0.0/8'] });
    expect(plain.split('\n')[0]).toBe('http_port 3128');
    expect(plain).not.toMatch(/ssl_bump|credential|hosts_file/);
  });

  it('reads the credential field of the log, absent for a request without one', () => {
    const entries = parseGatewayLog(
      [
        '1796534792.848 172.20.0.3 TCP_MISS/200 GET https://api.example.com/v1 203.0.113.2 api.example.com',
        '1796534792.873 172.20.0.3 NONE_NONE/200 CONNECT registry.npmjs.org:443 - -',
        '1796534792.900 172.20.0.3 TCP_TUNNEL/200 CONNECT example.com:443 93.184.215.14',
      ].join('\n'),
    );
    expect(entries.map((entry) => entry.credential)).toEqual(['api.example.com', undefined, undefined]);
    expect(entries[0]).toMatchObject({ allowed: true, address: '203.0.113.2' });
  });
});

describe('gateway host pins', () => {
  it('parses name=address and renders a hosts file', () => {
    const pins = parseGatewayHostPins(['API.Internal.example=203.0.113.2', ' db.example = 2001:db8::1 ']);
    expect(pins).toEqual([
      { name: 'api.internal.example', address: '203.0.113.2' },
      { name: 'db.example', address: '2001:db8::1' },
    ]);
    expect(renderGatewayHosts(pins)).toBe('203.0.113.2 api.internal.example\n2001:db8::1 db.example\n');
    expect(renderSquidConfig({ rules: [], blocked: ['10.0.0.0/8'], hostsFile: true })).toContain(
      'hosts_file /tmp/gw-hosts',
    );
  });

  it.each([
    'api.example',
    'api.example=',
    '*.example=203.0.113.2',
    'a=b=c',
    'api.example=203.0.113.0/24',
    'api.example:443=203.0.113.2',
  ])('refuses %j', (entry) => {
    expect(() => parseGatewayHostPins([entry])).toThrow(/invalid gateway host/);
  });
});
