import { describe, expect, it } from 'vitest';
import {
  CLAUDE_API_DESTINATION,
  claudeInstallEgressRules,
  cloneEgressRule,
  installEgressRules,
} from './egress-defaults.js';
import {
  describeEgressRule,
  egressBlockedRanges,
  hostBlockedRanges,
  parseEgressRule,
  parseEgressRules,
} from './egress-rules.js';
import { parseGatewayLog, renderSquidConfig } from './squid-config.js';

describe('parseEgressRule', () => {
  it.each([
    ['example.com', { kind: 'domain', domain: 'example.com', subdomains: false, ports: [443, 80] }],
    ['*.Example.com.', { kind: 'domain', domain: 'example.com', subdomains: true, ports: [443, 80] }],
    ['api.example.com:8443', { kind: 'domain', domain: 'api.example.com', subdomains: false, ports: [8443] }],
    ['203.0.113.7', { kind: 'cidr', cidr: '203.0.113.7/32', ports: [443, 80] }],
    ['203.0.113.7:22', { kind: 'cidr', cidr: '203.0.113.7/32', ports: [22] }],
    ['2001:db8::/32', { kind: 'cidr', cidr: '2001:db8::/32', ports: [443, 80] }],
    ['[2001:db8::1]:443', { kind: 'cidr', cidr: '2001:db8::1/128', ports: [443] }],
  ])('%s', (entry, rule) => {
    expect(parseEgressRule(entry)).toEqual(rule);
  });

  it.each([
    'exa mple.com',
    'example.com:0',
    'example.com:70000',
    '*.*.example.com',
    'example.*',
    '-x.example.com',
    'http://example.com',
    'example.com/path',
    '',
    'a'.repeat(300),
    '1.2.3',
  ])('refuses %j with a usage error', (entry) => {
    expect(() => parseEgressRule(entry)).toThrow(expect.objectContaining({ kind: 'usage' }));
  });

  it('de-duplicates and caps the list', () => {
    expect(parseEgressRules(['a.example', 'A.example', 'a.example:443'])).toHaveLength(2);
    expect(() => parseEgressRules(Array.from({ length: 257 }, (_, i) => `h${i}.example`))).toThrow(
      /too many/,
    );
  });
});

describe('blocked ranges', () => {
  it('derive the host own addresses and connected prefixes, whatever range its LAN is in', () => {
    const ranges = hostBlockedRanges({
      eth0: [
        {
          address: '198.51.100.23',
          netmask: '255.255.255.0',
          family: 'IPv4',
          mac: '00:00:00:00:00:00',
          internal: false,
          cidr: '198.51.100.23/24',
        },
      ],
    });
    expect(ranges).toEqual(['198.51.100.23/32', '198.51.100.0/24']);
  });

  it('always hold private, loopback, link-local (metadata) and IPv4-mapped space', () => {
    const all = egressBlockedRanges({});
    for (const range of [
      '10.0.0.0/8',
      '127.0.0.0/8',
      '169.254.0.0/16',
      '172.16.0.0/12',
      '192.168.0.0/16',
      '::ffff:0:0/96',
      'fc00::/7',
    ]) {
      expect(all).toContain(range);
    }
  });
});

describe('renderSquidConfig', () => {
  const config = renderSquidConfig({
    rules: parseEgressRules(['*.example.com', '203.0.113.0/24:8443']).concat([
      cloneEgressRule({ host: 'git.internal', scheme: 'ssh' }),
    ]),
    blocked: ['10.0.0.0/8'],
  });
  const lines = config.split('\n');
  const at = (text: string) => lines.findIndex((line) => line === text);

  it('lets explicit addresses and the repo host through before the blocked ranges, domains after', () => {
    expect(config).toContain('acl r0 dstdomain -n .example.com');
    expect(config).toContain('acl r1 dst -n 203.0.113.0/24');
    expect(config).toContain('acl r1_ports port 8443');
    expect(config).toContain('acl r2 dstdomain -n git.internal');
    expect(config).toContain('acl r2_ports port 22');
    expect(at('http_access allow r1 r1_ports')).toBeLessThan(at('http_access deny blocked'));
    expect(at('http_access allow r2 r2_ports')).toBeLessThan(at('http_access deny blocked'));
    expect(at('http_access allow r0 r0_ports')).toBeGreaterThan(at('http_access deny blocked'));
    expect(lines.filter(Boolean).at(-1)).toBe('http_access deny all');
  });

  it('refuses every name no rule allows before anything could resolve it', () => {
    // The one ACL that resolves names is `blocked`: only allowed names reach it.
    const resolving = lines.filter((line) => /^acl \S+ (dst|dstdomain|dstdom_regex) /.test(line));
    expect(resolving.filter((line) => !/ -n /.test(line))).toEqual(['acl blocked dst 10.0.0.0/8']);
    expect(config).toContain('acl allowed_names dstdomain -n .example.com git.internal');
    expect(at('http_access deny !allowed_names')).toBeLessThan(at('http_access deny blocked'));
    expect(at('http_access allow r1 r1_ports')).toBeLessThan(at('http_access deny !allowed_names'));
    expect(config).toContain('visible_hostname ca-sandbox-gateway');
  });

  it('resolves no name in any phase but through `blocked`, which allowed names alone reach', () => {
    const phases = {
      clone: [cloneEgressRule({ host: 'github.com', scheme: 'https' })],
      install: installEgressRules('node', { mirrors: ['http://10.1.2.3:4873/'] }),
      allowlist: parseEgressRules(['registry.npmjs.org', '*.pythonhosted.org', '192.0.2.0/24']),
    };
    for (const [phase, rules] of Object.entries(phases)) {
      const rendered = renderSquidConfig({ rules, blocked: ['10.0.0.0/8'] }).split('\n');
      const resolving = rendered.filter((line) => /^acl \S+ (dst|dstdomain|dstdom_regex) /.test(line));
      expect([phase, resolving.filter((line) => !/ -n /.test(line))]).toEqual([
        phase,
        ['acl blocked dst 10.0.0.0/8'],
      ]);
      const access = rendered.filter((line) => line.startsWith('http_access '));
      const refuse = access.indexOf('http_access deny !allowed_names');
      expect(refuse).toBeGreaterThan(-1);
      expect(access.indexOf('http_access deny blocked')).toBe(refuse + 1);
    }
  });

  it('keeps the widest of overlapping allowed names, and refuses all names when none is allowed', () => {
    const overlapping = renderSquidConfig({
      rules: parseEgressRules(['example.com', '*.example.com', 'a.example.com:8443', 'b.org', 'b.org:8080']),
      blocked: ['10.0.0.0/8'],
    });
    expect(overlapping).toContain('acl allowed_names dstdomain -n .example.com b.org\n');
    const addressesOnly = renderSquidConfig({
      rules: parseEgressRules(['203.0.113.7']),
      blocked: ['10.0.0.0/8'],
    });
    expect(addressesOnly).not.toContain('allowed_names');
    expect(addressesOnly.trimEnd().split('\n').slice(-2)).toEqual([
      'http_access allow r0 r0_ports',
      'http_access deny all',
    ]);
  });

  it('caches nothing and logs every decision to stdout', () => {
    expect(config).toContain('cache deny all');
    expect(config).toContain('access_log stdio:/dev/stdout ca');
  });
});

describe('defaults', () => {
  it('an install reaches its provider registries and the configured mirrors only', () => {
    const hosts = (provider: string, configured = {}) =>
      installEgressRules(provider, configured).map((rule) =>
        rule.kind === 'domain' ? rule.domain : rule.cidr,
      );
    expect(hosts('node')).toEqual(['registry.npmjs.org', 'registry.yarnpkg.com', 'repo.yarnpkg.com']);
    expect(hosts('python')).toEqual(['pypi.org', 'files.pythonhosted.org']);
    expect(hosts('plain')).toEqual([]);
    expect(
      hosts('go', { mirrors: ['https://goproxy.corp.example,direct'], extra: ['git.corp.example'] }),
    ).toEqual(['proxy.golang.org', 'sum.golang.org', 'goproxy.corp.example', 'git.corp.example']);
    // The environment is not read here: settings come resolved from @ca-sandbox/config.
    process.env.CA_SANDBOX_INSTALL_ALLOW = 'env.corp.example';
    try {
      expect(hosts('plain')).toEqual([]);
    } finally {
      delete process.env.CA_SANDBOX_INSTALL_ALLOW;
    }
    // A mirror's port and an IPv6 mirror address are kept exactly.
    expect(
      installEgressRules('plain', {
        mirrors: ['http://npm.corp.example:4873/', 'https://[2001:db8::5]:8443/'],
      }).map(describeEgressRule),
    ).toEqual(['npm.corp.example:4873', '2001:db8::5/128:8443']);
    // The user's own mirrors may live on the LAN: allowed wherever they resolve; defaults never.
    const rules = installEgressRules('node', { mirrors: ['https://npm.corp.example/'] });
    expect(rules.find((rule) => rule.kind === 'domain' && rule.domain === 'npm.corp.example')).toMatchObject({
      resolvesAnywhere: true,
    });
    expect(
      rules.find((rule) => rule.kind === 'domain' && rule.domain === 'registry.npmjs.org'),
    ).not.toHaveProperty('resolvesAnywhere');
  });
});

describe('--with-claude destinations', () => {
  it('the Claude Code build reaches the npm registry (and configured mirrors) only; the box the API on 443 only', () => {
    expect(claudeInstallEgressRules({}).map((rule) => rule.kind === 'domain' && rule.domain)).toEqual([
      'registry.npmjs.org',
    ]);
    expect(
      claudeInstallEgressRules({ mirrors: ['https://npm.corp.example/'] }).map(
        (rule) => rule.kind === 'domain' && rule.domain,
      ),
    ).toEqual(['registry.npmjs.org', 'npm.corp.example']);
    expect(parseEgressRule(CLAUDE_API_DESTINATION)).toEqual({
      kind: 'domain',
      domain: 'api.anthropic.com',
      subdomains: false,
      ports: [443],
    });
  });
});

describe('parseGatewayLog', () => {
  it('reads our format and skips anything else', () => {
    const entries = parseGatewayLog(
      [
        '1796111649.621 172.20.0.3 TCP_TUNNEL/200 CONNECT registry.npmjs.org:443 203.0.113.80',
        'garbage line',
        '1796111650.100 172.20.0.3 TCP_DENIED/403 CONNECT example.com:443 -',
      ].join('\n'),
    );
    expect(entries).toEqual([
      {
        time: new Date(1796111649621).toISOString(),
        allowed: true,
        result: 'TCP_TUNNEL/200',
        method: 'CONNECT',
        destination: 'registry.npmjs.org:443',
        address: '203.0.113.80',
      },
      {
        time: new Date(1796111650100).toISOString(),
        allowed: false,
        result: 'TCP_DENIED/403',
        method: 'CONNECT',
        destination: 'example.com:443',
      },
    ]);
  });

  it("names a connection that sent no request as such, never as a destination (squid's error:…)", () => {
    const [entry] = parseGatewayLog(
      '1796111651.000 172.20.0.3 NONE_NONE/000 NONE error:transaction-end-before-headers -',
    );
    expect(entry).toMatchObject({
      allowed: false,
      destination: '(no request: transaction-end-before-headers)',
    });
  });

  it('never reads a request squid rejected before any rule as an allowed place (its URL is box text)', () => {
    const entries = parseGatewayLog(
      [
        '1796111652.000 172.20.0.3 NONE_NONE/400 GET attacker.example:443 -',
        '1796111652.001 172.20.0.3 NONE_NONE/505 GET http://attacker.example/ -',
        '1796111652.002 172.20.0.3 NONE_NONE/400 GET (gateway-log-cut-at-16MiB:later-requests-not-recorded) -',
        '1796111652.003 172.20.0.3 NONE_NONE/414 GET error:request-too-large -',
        '1796111652.004 172.20.0.3 NONE_NONE/500 CONNECT allowed.test:443 -',
        '1796111652.005 172.20.0.3 TCP_MISS/404 GET http://allowed.test/x 203.0.113.9',
      ].join('\n'),
    );
    expect(entries.map((entry) => [entry.allowed, entry.destination])).toEqual([
      [false, '(invalid-request:attacker.example:443)'],
      [false, '(invalid-request:http://attacker.example/)'],
      [false, '(invalid-request:(gateway-log-cut-at-16MiB:later-requests-not-recorded))'],
      [false, '(no request: request-too-large)'],
      [true, 'allowed.test:443'],
      [true, 'http://allowed.test/x'],
    ]);
  });
});
