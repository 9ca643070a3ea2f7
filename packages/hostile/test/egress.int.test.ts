import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker, LABEL_ID, SANDBOX_FILTER } from '@ca-sandbox/docker';
import { GenericContainer, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, createBox, destroyBox, destroyLeftovers, escapes, execBox, parseJson } from './_harness.js';

/**
 * The dependency install runs the repo's scripts with the network on: through the egress gateway
 * it may reach its registries and nothing else. The probe is inline node (only manifests reach the
 * build), run by the root package's postinstall and by a workspace package's.
 */
const PROBE = `
const net = require('net'), dns = require('dns'), fs = require('fs');
// node -e CODE WHO [TARGETS] (install scripts) or node probe.js WHO TARGETS (the box)
const args = process.argv.slice(/.js$/.test(process.argv[1] || '') ? 2 : 1);
const targets = JSON.parse(process.env.npm_package_config_targets || args[1] || '[]');
const proxy = new URL(process.env.HTTPS_PROXY || process.env.https_proxy || 'http://0.0.0.0:1');
const out = [];
const tcp = (host, port) => new Promise((done) => {
  const s = net.connect({ host, port: Number(port) });
  const end = (r) => { s.destroy(); done(r); };
  s.setTimeout(3000, () => end('timeout'));
  s.on('connect', () => end('open')); s.on('error', (e) => end(e.code));
});
const connect = (target) => new Promise((done) => {
  const s = net.connect({ host: proxy.hostname, port: Number(proxy.port) });
  let head = '';
  s.setTimeout(8000, () => { s.destroy(); done('timeout'); });
  s.on('connect', () => s.write('CONNECT ' + target + ' HTTP/1.1\\r\\nHost: ' + target + '\\r\\n\\r\\n'));
  s.on('data', (d) => { head += d; if (head.includes('\\r\\n')) { s.destroy(); done(head.split(' ')[1]); } });
  s.on('error', (e) => done(e.code));
});
(async () => {
  for (const t of targets) {
    const [host, port] = [t.slice(0, t.lastIndexOf(':')), t.slice(t.lastIndexOf(':') + 1)];
    const direct = await tcp(host, port);
    out.push((direct === 'open' ? 'REACHED direct ' : 'BLOCKED direct ') + t + ' ' + direct);
    const via = await connect(t);
    out.push((via === '200' ? 'REACHED proxy ' : 'BLOCKED proxy ') + t + ' ' + via);
  }
  const name = await new Promise((d) => dns.lookup('example.com', (e, a) => d(e ? e.code : a)));
  out.push((/^[0-9.:a-f]+$/.test(name) ? 'RESOLVED dns ' : 'BLOCKED dns ') + name);
  out.push('off-list ' + (await connect('example.com:443')));
  out.push('registry ' + (await connect('registry.npmjs.org:443')));
  if (process.env.npm_lifecycle_event) fs.writeFileSync('/deps/egress-' + args[0] + '.txt', out.join('\\n') + '\\n');
  else process.stdout.write(out.join('\\n') + '\\n');
})();
`;

const script = (who: string) => `node -e "$npm_package_config_probe" ${who}`;

let listener: Server;
let hits = 0;
let port = 0;
let peer: StartedTestContainer;
let fixture: string;
let targets: string[];

/** The host's own addresses: every non-loopback IPv4 (its LAN address, docker's bridge gateways). */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((info) => info.family === 'IPv4' && !info.internal)
    .map((info) => info.address);
}

beforeAll(async () => {
  listener = createServer((socket) => {
    hits += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
  port = (listener.address() as { port: number }).port;
  peer = await new GenericContainer('ca-sbx-base:python')
    .withCommand(['python3', '-m', 'http.server', '8080'])
    .withExposedPorts(8080)
    .start();
  targets = [
    ...hostAddresses().map((address) => `${address}:${port}`),
    `${peer.getIpAddress('bridge')}:8080`,
  ];
  fixture = await mkdtemp(join(tmpdir(), 'ca-hostile-egress-'));
  const config = { probe: PROBE, targets: JSON.stringify(targets) };
  await writeFile(
    join(fixture, 'package.json'),
    JSON.stringify({
      name: 'egress-install',
      version: '1.0.0',
      private: true,
      workspaces: ['packages/*'],
      config,
      scripts: { postinstall: script('root') },
    }),
  );
  await writeFile(join(fixture, 'probe.js'), PROBE);
  await mkdir(join(fixture, 'packages', 'ws-a'), { recursive: true });
  await writeFile(
    join(fixture, 'packages', 'ws-a', 'package.json'),
    JSON.stringify({
      name: 'ws-a',
      version: '1.0.0',
      config,
      scripts: { postinstall: script('workspace') },
    }),
  );
});

afterAll(async () => {
  await destroyLeftovers();
  await peer?.stop();
  await new Promise((resolve) => listener?.close(resolve));
  if (fixture) await rm(fixture, { recursive: true, force: true });
});

describe('install scripts behind the egress gateway', () => {
  it('reach neither the host, the LAN, another container nor an off-list domain, and resolve no name', async () => {
    const box = await createBox(fixture, { network: 'clone-then-cut' });
    for (const who of ['root', 'workspace']) {
      const report = await execBox(box.id, ['cat', `/deps/egress-${who}.txt`]);
      expect(report.exitCode, `${who}: ${report.stderr}`).toBe(0);
      expect(escapes(report.stdout), `${who}:\n${report.stdout}`).toEqual([]);
      for (const target of targets) {
        expect(report.stdout).toContain(`BLOCKED direct ${target}`);
        expect(report.stdout).toMatch(new RegExp(`BLOCKED proxy ${target.replace(/\./g, '\\.')} 403`));
      }
      expect(report.stdout).toContain('BLOCKED dns');
      expect(report.stdout).toContain('off-list 403');
      // The control: the registry is on the list and its tunnel opens.
      expect(report.stdout).toContain('registry 200');
    }
    expect(hits).toBe(0);
    // What the install tried to reach is on the record, refusals included.
    const record = await cli(['egress', box.id, '--json']);
    expect(record.exitCode, record.stderr).toBe(0);
    const decisions = parseJson<{ phase: string; destination: string; allowed: boolean }[]>(record);
    expect(decisions).toContainEqual(
      expect.objectContaining({ phase: 'install', destination: 'example.com:443', allowed: false }),
    );
    expect(decisions).toContainEqual(
      expect.objectContaining({ phase: 'install', destination: 'registry.npmjs.org:443', allowed: true }),
    );
    await destroyBox(box.id);
    // Nothing of the gateway (container, networks) outlives the sandbox.
    const left = await docker([
      'network',
      'ls',
      '-q',
      '--filter',
      SANDBOX_FILTER,
      '--filter',
      `label=${LABEL_ID}=${box.id}`,
    ]);
    expect(left.stdout.trim()).toBe('');
  });

  it('the listener really answers an ordinary container (the probe is not vacuous)', async () => {
    const address = hostAddresses()[0];
    const probe = await docker(
      [
        'run',
        '--rm',
        'ca-sbx-base:debian',
        'bash',
        '-c',
        `timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${port}' && echo REACHED`,
      ],
      { allowFailure: true },
    );
    expect(probe.stdout).toContain('REACHED');
  });
});

describe('an allowlist box behind the egress gateway', () => {
  it('reaches the allowed name and the allowed address, and nothing else', async () => {
    const allowed = `${hostAddresses()[0]}:${port}`;
    const box = await createBox(fixture, {
      network: 'allowlist',
      extra: ['--allow', 'registry.npmjs.org', '--allow', allowed],
    });
    const before = hits;
    const probe = await execBox(
      box.id,
      ['node', 'probe.js', 'box', JSON.stringify([allowed, ...targets.slice(1)])],
      ['--timeout', '120'],
    );
    expect(probe.exitCode, probe.stderr).toBe(0);
    // The explicitly allowed address answers through the gateway, never directly.
    expect(probe.stdout).toContain(`BLOCKED direct ${allowed}`);
    expect(probe.stdout).toContain(`REACHED proxy ${allowed} 200`);
    expect(hits).toBeGreaterThan(before);
    for (const target of targets.slice(1)) {
      expect(probe.stdout).toContain(`BLOCKED direct ${target}`);
      expect(probe.stdout).toMatch(new RegExp(`BLOCKED proxy ${target.replace(/\./g, '\\.')} 403`));
    }
    expect(probe.stdout).toContain('BLOCKED dns');
    expect(probe.stdout).toContain('off-list 403');
    expect(probe.stdout).toContain('registry 200');
    const verify = await cli(['verify', box.id, '--json']);
    expect(verify.exitCode, verify.stdout).toBe(0);
    expect(parseJson<{ checks: { check: string; pass: boolean }[] }>(verify).checks).toContainEqual(
      expect.objectContaining({ check: 'allowlist-gateway', pass: true }),
    );
    const record = parseJson<{ phase: string; destination: string; allowed: boolean }[]>(
      await cli(['egress', box.id, '--json']),
    );
    expect(record).toContainEqual(
      expect.objectContaining({ phase: 'box', destination: 'example.com:443', allowed: false }),
    );
    await destroyBox(box.id);
    const left = await docker([
      'ps',
      '-aq',
      '--filter',
      SANDBOX_FILTER,
      '--filter',
      `label=${LABEL_ID}=${box.id}`,
    ]);
    expect(left.stdout.trim()).toBe('');
  });
});
